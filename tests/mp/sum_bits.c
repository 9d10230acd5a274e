/* sum_bits: float32 all_sum of inexact values (sums round) and NaNs, out of
 * place and in place, at sizes that take every path (direct, ring or single
 * copy). Every rank must hold the same bits, and with --rank-order they
 * must equal the sum taken in rank order (what single copy and direct
 * compute; over 2 ranks every path does, so DISTCOMM_CMA=0, =1 and the
 * default, which times both, give identical bits), NaN for NaN: which
 * payload a sum of two NaNs keeps follows the path's operand order. Every rank
 * prints "... N passed, F failed" (launch.sh). Usage: sum_bits [--rank-order]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

/* Every 97th element, from index 5, is a NaN on every rank, each with its
 * own payload: a sum of two NaNs keeps the first operand's, so ranks that
 * add in different orders would hold different bits there. */
static float input(int rank, size_t i) {
  if (i % 97 == 5) {
    uint32_t nan = 0x7fc00000u | (uint32_t)(rank + 1);
    float f;
    memcpy(&f, &nan, sizeof f);
    return f;
  }
  uint64_t h = mp_key(rank, i, DC_FLOAT32, 77);
  return (float)((double)(h >> 11) / 9007199254740992.0 * 2000.0 - 1000.0);
}

static uint64_t digest(const float *v, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &v[i], sizeof b);
    h = mp_mix(h ^ b);
  }
  return h;
}

/* Returns the number of problems found for count n. in_place: 0 no rank,
 * 1 every rank, 2 rank 0 alone (the others out of place: ranks may differ
 * there, and single copy's rounds must not). */
static int check(dc_group *g, size_t n, int in_place, int rank_order) {
  int rank = dc_group_rank(g), size = dc_group_size(g), bad = 0;
  float *send = mp_alloc(n * 4), *recv = mp_alloc(n * 4);
  for (size_t i = 0; i < n; i++)
    send[i] = input(rank, i);
  static const char *how[] = {"out of place", "in place", "rank 0 in place"};
  const char *mode = how[in_place];
  if (in_place == 2)
    in_place = rank == 0;
  float *out = in_place ? send : recv;
  dc_status st = dc_all_reduce(g, send, out, n, DC_FLOAT32, DC_SUM);
  if (st != DC_OK) {
    fprintf(stderr, "rank %d: all_sum of %zu: %s (%s)\n", rank, n,
            dc_status_name(st), dc_group_last_error(g));
    exit(1);
  }
  uint64_t mine = digest(out, n), *all = mp_alloc(sizeof mine * (size_t)size);
  st = dc_all_gather(g, &mine, all, 1, DC_UINT64);
  for (int q = 0; st == DC_OK && q < size; q++)
    bad += all[q] != mine;
  if (bad)
    fprintf(stderr, "rank %d: all_sum of %zu (%s): ranks hold different bits\n",
            rank, n, mode);
  for (size_t i = 0; rank_order && i < n; i++) {
    float want = input(0, i);
    for (int q = 1; q < size; q++)
      want += input(q, i);
    /* which NaN a path keeps follows its operand order; the ranks' bits
     * agree all the same (the digests above) */
    if (memcmp(&want, &out[i], 4) != 0 && !(want != want && out[i] != out[i])) {
      fprintf(stderr,
              "rank %d: all_sum of %zu (%s): element %zu is %.9g, "
              "rank order gives %.9g\n",
              rank, n, mode, i, out[i], want);
      bad++;
      break;
    }
  }
  free(all);
  free(send);
  free(recv);
  return bad + (st != DC_OK);
}

int main(int argc, char **argv) {
  int rank_order = argc > 1 && strcmp(argv[1], "--rank-order") == 0;
  dc_group *g = mp_init_or_die("sum_bits");
  static const size_t counts[] = {0, 1, 7, 16385, 262144, 1000003};
  int bad = 0, passed = 0;
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
    for (int in_place = 0; in_place < 3; in_place++) {
      int b = check(g, counts[k], in_place, rank_order);
      bad += b != 0;
      passed += b == 0;
    }
  printf("rank %d: sum_bits: %d passed, %d failed\n", dc_group_rank(g), passed,
         bad);
  dc_group_free(g);
  return bad ? 1 : 0;
}
