/* mpi_ops.c - the MPI side of bench/peers/new-ops.sh: all_to_all, gather,
 * scatter and reduce (MPI_Alltoall, MPI_Gather, MPI_Scatter, MPI_Reduce
 * MPI_SUM, float32, root 0), with the method and columns of
 * ../shared/bench/peers/mpi_bench.c (whose ideas it extends; shared/ stays
 * as it is) and the sizes of distcomm-perf, so that rows pair up:
 *   alltoall  S = each rank's send bytes (S/n to every rank)   busbw = algbw
 * (n-1)/n gather    S = bytes of the gathered output (S/n per rank)  busbw =
 * algbw (n-1)/n scatter   S = bytes of the root's input (S/n per rank) busbw =
 * algbw (n-1)/n reduce    S = bytes of the buffer on every rank busbw = algbw
 * A size too small for one float per rank is rounded up to one (the row
 * shows the bytes used, as distcomm-perf does). time per op = max over ranks
 * of (loop time / iters) after a barrier; the upper median of R runs.
 * Usage: mpirun -np N ./mpi_ops [runs=5] [max_bytes=134217728] [max_iters]
 *   max_iters caps the iterations per run (MPICH busy-polls: on more ranks
 *   than cores one small call takes milliseconds, and the schedule's 2000
 *   iterations would take minutes a size). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  size_t maxs = argc > 2 ? strtoull(argv[2], NULL, 10) : sizes[NS - 1];
  int cap_iters = argc > 3 ? atoi(argv[3]) : 0;
  size_t cap = maxs + (size_t)n * 4;
  float *sb = malloc(cap), *rb = malloc(cap);
  double *t = malloc((size_t)runs * sizeof(double));
  if (!sb || !rb || !t) {
    fprintf(stderr, "mpi_ops: no memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < cap / 4; i++) {
    sb[i] = (float)(rank + 1);
    rb[i] = 0.f;
  }
  const char *ops[] = {"alltoall", "gather", "scatter", "reduce"};
  if (rank == 0) {
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int l;
    MPI_Get_library_version(ver, &l);
    char *nl = strchr(ver, '\n');
    if (nl)
      *nl = 0;
    printf("# %s\n# nranks=%d runs=%d (median reported)\n", ver, n, runs);
    printf("%-15s %12s %6s %12s %10s %10s %s\n", "op", "bytes", "iters",
           "time_us", "algbw_GB/s", "busbw_GB/s", "check");
  }
  for (int o = 0; o < 4; o++) {
    for (size_t k = 0; k < NS && sizes[k] <= maxs; k++) {
      int it = iters_for(sizes[k]);
      if (cap_iters > 0 && it > cap_iters)
        it = cap_iters;
      int split = o != 3;
      size_t per = split ? sizes[k] / (4 * (size_t)n) : sizes[k] / 4;
      if (!per)
        per = 1;
      size_t S = split ? per * 4 * (size_t)n : per * 4;
      int c = (int)per;
      for (int r = -1; r < runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < it; i++) {
          switch (o) {
          case 0:
            MPI_Alltoall(sb, c, MPI_FLOAT, rb, c, MPI_FLOAT, MPI_COMM_WORLD);
            break;
          case 1:
            MPI_Gather(sb, c, MPI_FLOAT, rb, c, MPI_FLOAT, 0, MPI_COMM_WORLD);
            break;
          case 2:
            MPI_Scatter(sb, c, MPI_FLOAT, rb, c, MPI_FLOAT, 0, MPI_COMM_WORLD);
            break;
          case 3:
            MPI_Reduce(sb, rb, c, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            break;
          }
        }
        double dt = (MPI_Wtime() - t0) / it, mx;
        MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (r >= 0)
          t[r] = mx;
      }
      /* the last result: alltoall and gather hold rank j's value in part j
       * (on the root), scatter the root's, reduce the sum (on the root) */
      int ok = 1;
      size_t last = split ? per * (size_t)n - 1 : per - 1;
      if (o == 0 || (o == 1 && rank == 0))
        ok = rb[0] == 1.f && rb[last] == (float)n;
      if (o == 2)
        ok = rb[0] == 1.f && rb[per - 1] == 1.f;
      if (o == 3 && rank == 0)
        ok = rb[0] == n * (n + 1) / 2.0f && rb[per - 1] == n * (n + 1) / 2.0f;
      int allok;
      MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        qsort(t, (size_t)runs, sizeof(double), cmpd);
        double tm = t[runs / 2];
        double alg = S / tm / 1e9, fac = o == 3 ? 1.0 : (double)(n - 1) / n;
        printf("%-15s %12zu %6d %12.2f %10.3f %10.3f %s\n", ops[o], S, it,
               tm * 1e6, alg, alg * fac, allok ? "ok" : "WRONG");
        fflush(stdout);
      }
      for (size_t i = 0; i < cap / 4; i++)
        rb[i] = 0.f;
    }
  }
  free(sb);
  free(rb);
  free(t);
  MPI_Finalize();
  return 0;
}
