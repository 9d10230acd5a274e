/* small_ops: the time of one small op, in ns with a decimal, where
 * distcomm-perf's microseconds with two decimals are 10 ns steps (an 8 B
 * op over shared memory takes 0.08-0.15 us). Built by small-ops.sh against
 * each build's static library, started by its launcher.
 *
 * Each cell: N calls timed after a barrier, the best of REPS repetitions
 * (the cleanest, as the VM's neighbours come and go); rank 0 prints
 * "cell ns". Cells: all_reduce (ar), all_gather (ag), reduce_scatter (rs)
 * of 8 B and 1 KiB, and pingpong (pp, one way: send then recv on rank 0,
 * recv then send on rank 1). Usage: small_ops [N [REPS]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "distcomm.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { AR, AG, RS, PP, KINDS };
static const char *names[KINDS] = {"ar", "ag", "rs", "pp"};

/* One call of kind k on floats: bytes is what distcomm-perf's row says
 * (all_gather: the gathered output; reduce_scatter: the input). */
static dc_status one(dc_group *g, int k, size_t bytes, float *a, float *b) {
  size_t n = bytes / sizeof(float), size = (size_t)dc_group_size(g);
  switch (k) {
  case AR:
    return dc_all_reduce(g, a, b, n, DC_FLOAT32, DC_SUM);
  case AG:
    return dc_all_gather(g, a, b, n / size, DC_FLOAT32);
  case RS:
    return dc_reduce_scatter(g, a, b, n / size, DC_FLOAT32, DC_SUM);
  default:
    if (dc_group_rank(g) == 0) {
      dc_status st = dc_send(g, a, n, DC_FLOAT32, 1);
      return st != DC_OK ? st : dc_recv(g, b, n, DC_FLOAT32, 1);
    } else {
      dc_status st = dc_recv(g, b, n, DC_FLOAT32, 0);
      return st != DC_OK ? st : dc_send(g, a, n, DC_FLOAT32, 0);
    }
  }
}

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 200000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  dc_group *g;
  if (dc_init("any", 0, &g) != DC_OK || dc_group_size(g) != 2) {
    fprintf(stderr, "small_ops: needs 2 ranks (distcomm-launch -n 2): %s\n",
            dc_last_error());
    return 1;
  }
  static float a[512], b[1024];
  static const size_t sizes[] = {8, 1024};
  for (int k = 0; k < KINDS; k++)
    for (int z = 0; z < 2; z++) {
      double best = 1e30;
      for (int r = 0; r < reps; r++) {
        dc_barrier(g);
        double t0 = now();
        for (long i = 0; i < calls; i++)
          if (one(g, k, sizes[z], a, b) != DC_OK) {
            fprintf(stderr, "small_ops: %s\n", dc_group_last_error(g));
            return 1;
          }
        double ns = (now() - t0) / (double)calls * 1e9 / (k == PP ? 2 : 1);
        best = ns < best ? ns : best;
      }
      if (dc_group_rank(g) == 0)
        printf("%s%zu %.1f\n", names[k], sizes[z], best);
    }
  dc_group_free(g);
  return 0;
}
