/* schedule.h - the sizes and iterations per size that the peers' programs
 * here (mpi_ops.c, ccl_bench.cc) share with run-peers.sh's MPI and Gloo
 * runs and with distcomm-perf's default (-n unset): 2000 calls up to 1 KiB
 * ... 3 above 16 MiB, so every side's rows time alike. C and C++. */
#ifndef DC_BENCH_PEERS_SCHEDULE_H
#define DC_BENCH_PEERS_SCHEDULE_H

#include <stddef.h>

static const size_t sizes[] = {8, 1024, 65536, 1 << 20, 16 << 20, 128 << 20};
#define NS (sizeof(sizes) / sizeof(sizes[0]))

static inline int iters_for(size_t s) {
  return s <= 1024         ? 2000
         : s <= 65536      ? 500
         : s <= (1 << 20)  ? 100
         : s <= (16 << 20) ? 10
                           : 3;
}

#endif
