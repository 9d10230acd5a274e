/* many_ranks: examples/hello's work (init, all_sum of ten ones, free) with a
 * timestamp and the CPU time used so far at each step, one line per rank:
 *   T RANK MAIN INIT SUM FREE SUMOK C CPU_MAIN CPU_INIT CPU_SUM CPU_FREE
 * (wall-clock seconds since the epoch; CPU seconds of this process, exec
 * and dynamic loading included). bench/scale/many-ranks.sh runs it. */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "distcomm.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

int main(void) {
  double t0 = now(), c0 = cpu();
  dc_group *w;
  dc_status st = dc_init("any", 0, &w);
  if (st != DC_OK) {
    fprintf(stderr, "init: %s: %s\n", dc_strerror(st), dc_last_error());
    return 1;
  }
  double t1 = now(), c1 = cpu();
  float x[10];
  for (int i = 0; i < 10; i++)
    x[i] = 1.0f;
  st = dc_all_sum(w, x, x, 10, DC_FLOAT32);
  if (st != DC_OK) {
    fprintf(stderr, "all_sum: %s\n", dc_group_last_error(w));
    dc_group_free(w);
    return 1;
  }
  double t2 = now(), c2 = cpu();
  int rank = dc_group_rank(w), ok = x[0] == (float)dc_group_size(w);
  dc_group_free(w);
  double t3 = now(), c3 = cpu();
  printf("T %d %.6f %.6f %.6f %.6f %d C %.4f %.4f %.4f %.4f\n", rank, t0, t1,
         t2, t3, ok, c0, c1, c2, c3);
  return ok ? 0 : 1;
}
