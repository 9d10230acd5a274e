#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t sizes[] = {65536, 1 << 20};
  float *sb = calloc(1 << 20, 1), *rb = calloc(1 << 20, 1);
  for (int o = 0; o < 2; o++)
    for (int k = 0; k < 2; k++) {
      size_t S = sizes[k];
      int it = S <= 65536 ? 500 : 100, cnt = (int)(S / 4);
      double t[5];
      for (int r = 0; r < 5; r++) {
        for (int w = 0; w < it / 10 + 1; w++) {
          if (o == 0)
            MPI_Allreduce(sb, rb, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else
            MPI_Allgather(sb, cnt / n, MPI_FLOAT, rb, cnt / n, MPI_FLOAT,
                          MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < it; i++) {
          if (o == 0)
            MPI_Allreduce(sb, rb, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          else
            MPI_Allgather(sb, cnt / n, MPI_FLOAT, rb, cnt / n, MPI_FLOAT,
                          MPI_COMM_WORLD);
        }
        double dt = (MPI_Wtime() - t0) / it * 1e6, mx;
        MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[r] = mx;
      }
      qsort(t, 5, sizeof t[0], cmpd);
      if (rank == 0)
        printf("%-10s %8zu %10.2f  (min %.2f max %.2f)\n",
               o ? "allgather" : "allreduce", S, t[2], t[0], t[4]);
    }
  MPI_Finalize();
  return 0;
}
