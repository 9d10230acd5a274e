/* mpi_groups: the MPI backend under mpirun, beyond the conformance suite.
 *
 *   - the world is the "mpi" backend (strict init), and so are its splits;
 *   - MLX's test_groups / test_mixed: split by rank % 2 and by rank / 2, then
 *     collectives inside each subgroup mixed with collectives on the world
 *     (float16 goes through the user-defined MPI op, float32 through MPI's);
 *   - an MPI error comes back as a status with MPI's text (a receive shorter
 *     than the message: MPI_ERR_TRUNCATE) instead of aborting the process.
 * Prints "rank R/N: K checks passed, F failed"; exits 1 on a failure. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distcomm.h"

static long pass, fail;
static int me;

static void check(int ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...) {
  if (ok) {
    pass++;
    return;
  }
  fail++;
  va_list ap;
  va_start(ap, fmt);
  printf("rank %d: FAIL ", me);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

/* 1.0 in float16 is 0x3c00; small integer sums are exact. */
static uint16_t half_of(int v) {
  static const uint16_t tab[] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400,
                                 0x4500, 0x4600, 0x4700, 0x4800, 0x4880,
                                 0x4900, 0x4980, 0x4a00};
  return v >= 0 && v < 13 ? tab[v] : 0xffff;
}

/* Inside a subgroup: all_sum (float32 and float16), all_gather of parent
 * ranks, sum_scatter, broadcast from the last rank, send/recv. */
static void in_group(dc_group *sub, const char *name, int parent_rank) {
  int r = dc_group_rank(sub), n = dc_group_size(sub);
  check(strcmp(dc_group_backend(sub), "mpi") == 0 || n == 1, "%s: backend %s",
        name, dc_group_backend(sub));
  float f = 1.0f;
  check(dc_all_sum(sub, &f, &f, 1, DC_FLOAT32) == DC_OK && f == (float)n,
        "%s: all_sum float32 gave %g, want %d", name, f, n);
  uint16_t h = half_of(1);
  check(dc_all_sum(sub, &h, &h, 1, DC_FLOAT16) == DC_OK && h == half_of(n),
        "%s: all_sum float16 gave 0x%04x, want 0x%04x", name, h, half_of(n));
  int32_t mine = parent_rank, all[64] = {0};
  check(dc_all_gather(sub, &mine, all, 1, DC_INT32) == DC_OK &&
            all[r] == parent_rank,
        "%s: all_gather", name);
  int32_t blocks[64], got = -1;
  for (int i = 0; i < n; i++)
    blocks[i] = i + 1;
  check(dc_sum_scatter(sub, blocks, &got, 1, DC_INT32) == DC_OK &&
            got == n * (r + 1),
        "%s: sum_scatter gave %d, want %d", name, got, n * (r + 1));
  int32_t b = r == n - 1 ? 4242 : -1;
  check(dc_broadcast(sub, &b, 1, DC_INT32, n - 1) == DC_OK && b == 4242,
        "%s: broadcast gave %d", name, b);
  if (n > 1 && (r == 0 || r == n - 1)) {
    int32_t v = r == 0 ? parent_rank : -1;
    dc_status st = r == 0 ? dc_send(sub, &v, 1, DC_INT32, n - 1)
                          : dc_recv(sub, &v, 1, DC_INT32, 0);
    check(st == DC_OK && (r == 0 || v == all[0]), "%s: send/recv", name);
  }
}

static void world_sum(dc_group *world, const char *when) {
  int n = dc_group_size(world);
  int64_t v = me + 1;
  check(dc_all_sum(world, &v, &v, 1, DC_INT64) == DC_OK &&
            v == (int64_t)n * (n + 1) / 2,
        "world all_sum %s gave %lld", when, (long long)v);
}

/* MLX's test_groups and test_mixed: subgroups and the world interleaved. */
static void test_splits(dc_group *world) {
  dc_group *par = NULL, *pairs = NULL;
  check(dc_group_split(world, me % 2, -1, &par) == DC_OK && par,
        "split rank %% 2");
  world_sum(world, "between splits");
  check(dc_group_split(world, me / 2, -1, &pairs) == DC_OK && pairs,
        "split rank / 2");
  if (par && pairs) {
    in_group(par, "rank % 2", me);
    world_sum(world, "between subgroups");
    in_group(pairs, "rank / 2", me);
    in_group(par, "rank % 2 again", me);
  }
  dc_group_free(pairs);
  dc_group_free(par);
}

/* Rank 0 sends 64 bytes, rank 1 asks for 8: MPI_ERR_TRUNCATE on rank 1,
 * reported, not fatal. Only ranks 0 and 1 of a split take part. */
static void test_mpi_error(dc_group *world) {
  dc_group *two = NULL;
  dc_group_split(world, me < 2 ? 0 : DC_UNDEFINED, -1, &two);
  if (!two)
    return;
  uint8_t buf[64] = {0};
  if (me == 0) {
    check(dc_send(two, buf, 64, DC_UINT8, 1) == DC_OK, "send of 64 bytes");
  } else {
    dc_status st = dc_recv(two, buf, 8, DC_UINT8, 0);
    const char *err = dc_group_last_error(two);
    check(st == DC_ERR_SYSTEM && strstr(err, "MPI_Recv") &&
              (strstr(err, "runcat") || strstr(err, "TRUNCATE")),
          "short recv returned %s: \"%s\"", dc_status_name(st), err);
    check(dc_barrier(two) == st, "the failed group is poisoned");
  }
  dc_group_free(two);
}

/* dc_group_shrink is refused with the reason, and the world goes on. */
static void test_no_shrink(dc_group *world) {
  dc_group *s = (dc_group *)world;
  dc_status st = dc_group_shrink(world, &s);
  const char *err = dc_last_error();
  check(st == DC_ERR_NOT_SUPPORTED && !s &&
            strstr(err, "shrink: not supported on the mpi backend"),
        "shrink on mpi returned %s: \"%s\"", dc_status_name(st), err);
  world_sum(world, "after the refused shrink");
}

int main(void) {
  dc_group *world = NULL;
  dc_status st = dc_init("mpi", 1, &world);
  if (st != DC_OK) {
    printf("mpi_groups: dc_init(\"mpi\", strict) failed: %s: %s\n",
           dc_status_name(st), dc_last_error());
    return 1;
  }
  me = dc_group_rank(world);
  int n = dc_group_size(world);
  check(strcmp(dc_group_backend(world), "mpi") == 0, "world backend is %s",
        dc_group_backend(world));
  test_splits(world);
  test_mpi_error(world);
  test_no_shrink(world);
  check(dc_barrier(world) == DC_OK, "world barrier at the end");
  printf("rank %d/%d: %ld checks passed, %ld failed\n", me, n, pass, fail);
  dc_group_free(world);
  return fail || pass < 8 ? 1 : 0;
}
