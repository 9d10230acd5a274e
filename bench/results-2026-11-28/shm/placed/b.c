/* mpi_bench.c - nccl-tests-style collective benchmark for MPI (OpenMPI or MPICH).
 * Ops: allreduce (MPI_SUM, float32), allgather, reduce_scatter_block (MPI_SUM float32), pingpong (Send/Recv).
 * Size convention (as nccl-tests):
 *   allreduce:       S = bytes of the buffer on every rank;           busbw = algbw * 2(n-1)/n
 *   allgather:       S = bytes of the gathered OUTPUT (each sends S/n); busbw = algbw * (n-1)/n
 *   reduce_scatter:  S = bytes of the INPUT (each receives S/n);       busbw = algbw * (n-1)/n
 *   pingpong:        S = message bytes; time = RTT/2 (one way);        busbw = algbw
 * algbw = S / time.  time per op = max over ranks of (loop time / iters); report the median of R runs.
 * Usage: mpirun -np 2 ./mpi_bench [runs=7]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static const size_t sizes[] = {(128 << 20)};
#define NS (sizeof(sizes) / sizeof(sizes[0]))
static int iters_for(size_t s) { return s <= 1024 ? 2000 : s <= 65536 ? 500 : s <= (1 << 20) ? 100 : s <= (16 << 20) ? 10 : 3; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &n);
    int runs = argc > 1 ? atoi(argv[1]) : 7;
    size_t maxs = sizes[NS - 1];
    float *sb = malloc(maxs), *rb = malloc(maxs);
    for (size_t i = 0; i < maxs / 4; i++) { sb[i] = (float)(rank + 1); rb[i] = 0.f; }
    const char *ops[] = {"allreduce", "allgather", "reduce_scatter", "pingpong"};
    double *t = malloc(runs * sizeof(double));
    if (rank == 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING]; int l; MPI_Get_library_version(ver, &l);
        char *nl = strchr(ver, '\n'); if (nl) *nl = 0;
        printf("# %s\n# nranks=%d runs=%d (median reported)\n", ver, n, runs);
        printf("%-15s %12s %6s %12s %10s %10s %s\n", "op", "bytes", "iters", "time_us", "algbw_GB/s", "busbw_GB/s", "check");
    }
    for (int o = 0; o < 4; o++) {
        if (o == 3 && n != 2) continue;
        for (size_t k = 0; k < NS; k++) {
            size_t S = sizes[k]; int it = iters_for(S);
            int cnt = (int)(S / 4), per = cnt / n;
            for (int r = -1; r < runs; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int i = 0; i < it; i++) {
                    switch (o) {
                    case 0: MPI_Allreduce(sb, rb, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
                    case 1: MPI_Allgather(sb, per, MPI_FLOAT, rb, per, MPI_FLOAT, MPI_COMM_WORLD); break;
                    case 2: MPI_Reduce_scatter_block(sb, rb, per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
                    case 3:
                        if (rank == 0) { MPI_Send(sb, (int)S, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(rb, (int)S, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
                        else { MPI_Recv(rb, (int)S, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(rb, (int)S, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
                        break;
                    }
                }
                double dt = (MPI_Wtime() - t0) / it, mx;
                MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
                if (r >= 0) t[r] = mx;
            }
            /* correctness check of the last result */
            int ok = 1; float expect = n * (n + 1) / 2.0f;
            if (o == 0) ok = rb[0] == expect && rb[cnt - 1] == expect;
            if (o == 2) ok = rb[0] == expect && rb[per - 1] == expect;
            if (o == 1) ok = rb[0] == 1.f && rb[cnt - 1] == (float)n;
            int allok; MPI_Reduce(&ok, &allok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                qsort(t, runs, sizeof(double), cmpd);
                double tm = t[runs / 2]; if (o == 3) tm /= 2; /* one-way */
                double alg = S / tm / 1e9, fac = o == 0 ? 2.0 * (n - 1) / n : (o == 3 ? 1.0 : (double)(n - 1) / n);
                printf("%-15s %12zu %6d %12.2f %10.3f %10.3f %s\n", ops[o], S, it, tm * 1e6, alg, alg * fac, allok ? "ok" : "WRONG");
                fflush(stdout);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
