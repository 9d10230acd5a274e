/* bench-bucketing: what bucketing buys in dc_average_gradients.
 *
 * Seed 002's advice for distributed training is "a few large reductions
 * instead of many small ones". This measures it: the same list of gradient
 * tensors (default 200 x 4 KiB of float32) averaged with MLX's default
 * bucket (32 MiB: one all_sum for the lot), with 64 KiB buckets, and one
 * tensor at a time (all_reduce_size = 0: 200 all_sums). Each figure is the
 * median over several rounds, the modes interleaved so that a noisy
 * machine hurts them alike; a round's time is the slowest rank's.
 *
 *   distcomm-launch -n 2 -- bench-bucketing [--tensors N] [--bytes B]
 *                                          [--iters I] [--rounds R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distcomm.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(dc_group *g, const char *what, dc_status st) {
  fprintf(stderr, "bench-bucketing: %s: %s (%s)\n", what, dc_strerror(st),
          g ? dc_group_last_error(g) : dc_last_error());
  exit(1);
}

/* Seconds per average_gradients call over iters calls, slowest rank. */
static double time_calls(dc_group *g, dc_tensor *t, size_t n, long long bucket,
                         int iters) {
  dc_status st = dc_barrier(g);
  if (st != DC_OK)
    die(g, "barrier", st);
  double t0 = now();
  for (int i = 0; i < iters; i++)
    if ((st = dc_average_gradients(g, t, n, bucket)) != DC_OK)
      die(g, "average_gradients", st);
  double per_call = (now() - t0) / iters;
  if ((st = dc_all_max(g, &per_call, &per_call, 1, DC_FLOAT64)) != DC_OK)
    die(g, "all_max", st);
  return per_call;
}

static long arg(int argc, char **argv, const char *name, long def) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) {
      char *end;
      long v = strtol(argv[i + 1], &end, 10);
      if (*end || v <= 0) {
        fprintf(stderr, "bench-bucketing: %s must be a positive integer\n",
                name);
        exit(2);
      }
      return v;
    }
  return def;
}

int main(int argc, char **argv) {
  size_t ntensors = (size_t)arg(argc, argv, "--tensors", 200);
  size_t bytes = (size_t)arg(argc, argv, "--bytes", 4096);
  int iters = (int)arg(argc, argv, "--iters", 100);
  int rounds = (int)arg(argc, argv, "--rounds", 7);
  size_t count = bytes / sizeof(float);
  if (count == 0) {
    fprintf(stderr, "bench-bucketing: --bytes must be at least 4\n");
    return 2;
  }
  dc_group *g = NULL;
  dc_status st = dc_init("any", 0, &g);
  if (st != DC_OK)
    die(NULL, "dc_init", st);
  int rank = dc_group_rank(g), size = dc_group_size(g);

  float *data = malloc(ntensors * count * sizeof *data);
  dc_tensor *t = malloc(ntensors * sizeof *t);
  if (!data || !t)
    die(g, "malloc", DC_ERR_NOMEM);
  for (size_t i = 0; i < ntensors; i++) {
    for (size_t j = 0; j < count; j++)
      data[i * count + j] = 1.0f; /* stays 1.0 through any number of averages */
    t[i] = (dc_tensor){data + i * count, count, DC_FLOAT32};
  }

  /* The modes, and as a floor the same bytes as a single tensor: one
   * all_sum in place, no packing, what a bucket could cost at best. */
  enum { MODES = 4 };
  dc_tensor whole = {data, ntensors * count, DC_FLOAT32};
  const long long bucket[MODES] = {DC_ALL_REDUCE_SIZE_DEFAULT, 64 * 1024, 0,
                                   DC_ALL_REDUCE_SIZE_DEFAULT};
  dc_tensor *list[MODES] = {t, t, t, &whole};
  size_t nlist[MODES] = {ntensors, ntensors, ntensors, 1};
  const char *label[MODES] = {
      "bucketed, all_reduce_size 32 MiB", "bucketed, all_reduce_size 64 KiB",
      "one by one, all_reduce_size 0", "(floor: the same bytes as 1 tensor)"};
  double *times = malloc(sizeof(double) * MODES * (size_t)rounds);
  unsigned long long sums[MODES];
  for (int m = 0; m < MODES; m++) {
    unsigned long long before = dc_group_collectives(g);
    time_calls(g, list[m], nlist[m], bucket[m], 1); /* warm-up, and count */
    sums[m] = dc_group_collectives(g) - before - 2; /* barrier and all_max */
    time_calls(g, list[m], nlist[m], bucket[m], iters / 10 + 1);
  }
  for (int r = 0; r < rounds; r++)
    for (int m = 0; m < MODES; m++)
      times[m * rounds + r] =
          time_calls(g, list[m], nlist[m], bucket[m], iters);

  if (rank == 0) {
    printf("bench-bucketing: %d ranks (%s), %zu tensors x %zu bytes float32 "
           "(%.0f KiB), median of %d rounds x %d calls\n",
           size, dc_group_backend(g), ntensors, count * sizeof(float),
           (double)(ntensors * count * sizeof(float)) / 1024, rounds, iters);
    double med[MODES];
    for (int m = 0; m < MODES; m++) {
      qsort(times + m * rounds, (size_t)rounds, sizeof(double), cmp_double);
      med[m] = times[m * rounds + rounds / 2];
      printf("  %-36s %4llu all_sum%s per call  %10.1f us/call\n", label[m],
             sums[m], sums[m] == 1 ? " " : "s", med[m] * 1e6);
    }
    printf("  one by one / bucketed (32 MiB): %.1fx slower\n", med[2] / med[0]);
  }
  int bad = 0;
  for (size_t i = 0; i < ntensors * count; i++)
    bad |= data[i] != 1.0f;
  if (bad)
    fprintf(stderr, "bench-bucketing: rank %d: averaged values changed!\n",
            rank);
  free(times);
  free(t);
  free(data);
  dc_group_free(g);
  return bad;
}
