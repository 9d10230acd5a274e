/* hello - the first program of the MLX distributed docs, in C:
 *
 *   world = mx.distributed.init()
 *   x = mx.distributed.all_sum(mx.ones(10))
 *   print(world.rank(), x)
 *
 * Alone it prints "0 array([1, 1, ...], dtype=float32)"; launched on N ranks
 * (distcomm-launch -n 2 -- ./examples/hello) every rank prints N's. */
#include <stdio.h>

#include "distcomm.h"

#define N 10

/* Formats x the way MLX prints a float32 array: integral values without a
 * decimal point ("2", not "2.0"), comma-separated, dtype at the end. */
static void format_array(char *out, size_t cap, const float *x, size_t n) {
  size_t len = (size_t)snprintf(out, cap, "array([");
  for (size_t i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%g", i ? ", " : "",
                            (double)x[i]);
  if (len < cap)
    snprintf(out + len, cap - len, "], dtype=float32)");
}

static int fail(const char *what, dc_status st, const char *detail) {
  fprintf(stderr, "hello: %s: %s%s%s\n", what, dc_strerror(st),
          *detail ? ": " : "", detail);
  return 1;
}

int main(void) {
  dc_group *world;
  dc_status st = dc_init("any", 0, &world);
  if (st != DC_OK)
    return fail("init", st, dc_last_error());

  float x[N];
  for (int i = 0; i < N; i++)
    x[i] = 1.0f;
  st = dc_all_sum(world, x, x, N, DC_FLOAT32); /* in place, as MLX allows */
  if (st != DC_OK) {
    int rc = fail("all_sum", st, dc_group_last_error(world));
    dc_group_free(world);
    return rc;
  }

  /* One printf per rank, so the launcher never interleaves half lines. */
  char line[512];
  format_array(line, sizeof line, x, N);
  printf("%d %s\n", dc_group_rank(world), line);
  dc_group_free(world);
  return 0;
}
