/* Conformance of all_to_all, all_to_allv, gather, scatter and reduce_to,
 * blocking and non-blocking: every dtype, counts 0, 1, odd and large,
 * uneven all_to_allv blocks at scattered offsets, every root. Each rank
 * rebuilds every other rank's input (mp_key), so it knows what it must get.
 * Moved data is random bytes, compared bit for bit; reductions use 0..3
 * in each dtype (exact in every dtype and order) and are checked against
 * dc_reduce_local over the rebuilt inputs in rank order.
 *
 * Usage: conf_ops [--size N] [--quick]
 *        conf_ops mismatch root|count|op
 *        conf_ops neighbours   (DISTCOMM_RING_NEIGHBOURS=1, over 3 ranks:
 *   all_to_all, gather and scatter fail alike on every rank with
 *   ERR_NOT_SUPPORTED naming the setting, and the group still works)
 *   mismatch: rank 0 disagrees (gather root 0 vs 1 / scatter count 5 vs 6 /
 *   reduce_to vs all_sum): every rank must fail with ERR_MISMATCH within
 *   5 s (the timeout is 60 s), its group poisoned.
 * Prints "rank R/N: K checks passed, F failed". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

static long pass, fails;
static int rank, size;
static dc_group *g;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      pass++;                                                                  \
    } else if (fails++ < 10) {                                                 \
      printf("rank %d/%d: FAIL ", rank, size);                                 \
      printf(__VA_ARGS__);                                                     \
      printf(" (%s)\n", dc_group_last_error(g));                               \
    }                                                                          \
  } while (0)

/* Random bytes of rank r's input for tag. */
static void bytes_of(int r, int tag, void *buf, size_t n) {
  unsigned char *p = buf;
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)mp_mix(mp_key(r, i, tag & 0xff, tag >> 8));
}

/* 0..3 in dtype t: exact sums and products of up to 4 ranks. */
static void small_of(int r, int tag, dc_dtype t, void *buf, size_t n) {
  static const uint16_t f16[] = {0x0000, 0x3C00, 0x4000, 0x4200};
  size_t es = dc_dtype_size(t);
  for (size_t i = 0; i < n; i++) {
    int v = (int)(mp_mix(mp_key(r, i, t, tag)) & 3);
    float f = (float)v;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    unsigned char *e = (unsigned char *)buf + i * es;
    memset(e, 0, es);
    switch (t) {
    case DC_BOOL:
      e[0] = (unsigned char)(v & 1);
      break;
    case DC_FLOAT16:
      memcpy(e, &f16[v], 2);
      break;
    case DC_BFLOAT16: {
      uint16_t h = (uint16_t)(fb >> 16);
      memcpy(e, &h, 2);
    } break;
    case DC_FLOAT32:
    case DC_COMPLEX64:
      memcpy(e, &f, 4);
      break;
    case DC_FLOAT64: {
      double d = v;
      memcpy(e, &d, 8);
    } break;
    default:
      e[0] = (unsigned char)v;
      break; /* little-endian ints */
    }
  }
}

/* Run one op blocking or as a request waited on. */
#define RUN(nb, blocking_call, request_call)                                   \
  ({                                                                           \
    dc_status st_;                                                             \
    if (!(nb)) {                                                               \
      st_ = blocking_call;                                                     \
    } else {                                                                   \
      dc_request *r_ = NULL;                                                   \
      st_ = request_call;                                                      \
      if (st_ == DC_OK)                                                        \
        st_ = dc_wait(r_);                                                     \
      dc_request_free(r_);                                                     \
    }                                                                          \
    st_;                                                                       \
  })

static void all_to_all(dc_dtype t, size_t n, int nb, int tag) {
  size_t es = dc_dtype_size(t), blk = n * es, all = blk * (size_t)size;
  char *send = mp_alloc(all), *recv = mp_alloc(all), *want = mp_alloc(all);
  char *peer = mp_alloc(all);
  bytes_of(rank, tag, send, all);
  memset(recv, 0xEE, all);
  for (int q = 0; q < size; q++) {
    bytes_of(q, tag, peer, all);
    memcpy(want + (size_t)q * blk, peer + (size_t)rank * blk, blk);
  }
  dc_status st = RUN(nb, dc_all_to_all(g, send, recv, n, t),
                     dc_iall_to_all(g, send, recv, n, t, &r_));
  CHECK(st == DC_OK && memcmp(recv, want, all) == 0,
        "all_to_all %s count %zu nb %d: %s", dc_dtype_name(t), n, nb,
        dc_status_name(st));
  free(send), free(recv), free(want), free(peer);
}

/* Elements rank r sends rank q: uneven, some zero. */
static size_t vcount(int r, int q, size_t n) {
  return (n + (size_t)r * 3 + (size_t)q * 5) % (n + 4);
}

static void all_to_allv(dc_dtype t, size_t n, int nb, int tag) {
  size_t es = dc_dtype_size(t), sc[64], so[64], rc[64], ro[64];
  size_t stot = 0, rtot = 0;
  for (int q = size - 1; q >= 0; q--) { /* blocks in reverse, one apart */
    sc[q] = vcount(rank, q, n), so[q] = stot, stot += sc[q] + 1;
    rc[q] = vcount(q, rank, n), ro[q] = rtot, rtot += rc[q] + 1;
  }
  char *send = mp_alloc(stot * es), *recv = mp_alloc(rtot * es);
  char *want = mp_alloc(rtot * es);
  bytes_of(rank * 64 + 1, tag, send, stot * es); /* element i of any block */
  memset(recv, 0xEE, rtot * es);
  memset(want, 0xEE, rtot * es);
  for (int q = 0; q < size; q++) {
    /* rebuild q's send buffer layout to find its block for us */
    size_t qoff = 0, tot = 0;
    for (int p = size - 1; p >= 0; p--) {
      if (p == rank)
        qoff = tot;
      tot += vcount(q, p, n) + 1;
    }
    char *qs = mp_alloc(tot * es);
    bytes_of(q * 64 + 1, tag, qs, tot * es);
    memcpy(want + ro[q] * es, qs + qoff * es, rc[q] * es);
    free(qs);
  }
  dc_status st = RUN(nb, dc_all_to_allv(g, send, sc, so, recv, rc, ro, t),
                     dc_iall_to_allv(g, send, sc, so, recv, rc, ro, t, &r_));
  CHECK(st == DC_OK && memcmp(recv, want, rtot * es) == 0,
        "all_to_allv %s around %zu nb %d: %s", dc_dtype_name(t), n, nb,
        dc_status_name(st));
  free(send), free(recv), free(want);
}

static void rooted(dc_dtype t, size_t n, int root, int nb, int tag) {
  size_t es = dc_dtype_size(t), blk = n * es, all = blk * (size_t)size;
  char *a = mp_alloc(all), *b = mp_alloc(all), *want = mp_alloc(all);
  /* gather */
  bytes_of(rank, tag, a, blk);
  memset(b, 0xEE, all);
  for (int q = 0; q < size; q++)
    bytes_of(q, tag, want + (size_t)q * blk, blk);
  dc_status st =
      RUN(nb, dc_gather(g, a, rank == root ? b : NULL, n, t, root),
          dc_igather(g, a, rank == root ? b : NULL, n, t, root, &r_));
  CHECK(st == DC_OK && (rank != root || memcmp(b, want, all) == 0),
        "gather %s count %zu root %d nb %d: %s", dc_dtype_name(t), n, root, nb,
        dc_status_name(st));
  /* scatter: root's send is its "want" of the gather with tag + 1 */
  bytes_of(root, tag + 1, a, all);
  memset(b, 0xEE, blk);
  st = RUN(nb, dc_scatter(g, rank == root ? a : NULL, b, n, t, root),
           dc_iscatter(g, rank == root ? a : NULL, b, n, t, root, &r_));
  CHECK(st == DC_OK && memcmp(b, a + (size_t)rank * blk, blk) == 0,
        "scatter %s count %zu root %d nb %d: %s", dc_dtype_name(t), n, root, nb,
        dc_status_name(st));
  /* reduce_to: sum, and max where the dtype has one */
  for (int op = DC_SUM; op <= DC_MAX; op++) {
    if (op == DC_MAX && t == DC_COMPLEX64)
      continue;
    small_of(0, tag + op, t, want, n);
    for (int q = 1; q < size; q++) {
      small_of(q, tag + op, t, b, n);
      dc_reduce_local(want, b, n, t, (dc_op)op);
    }
    small_of(rank, tag + op, t, a, n);
    memset(b, 0xEE, blk);
    st = RUN(nb,
             dc_reduce_to(g, a, rank == root ? b : NULL, n, t, (dc_op)op, root),
             dc_ireduce_to(g, a, rank == root ? b : NULL, n, t, (dc_op)op, root,
                           &r_));
    CHECK(st == DC_OK && (rank != root || memcmp(b, want, blk) == 0),
          "reduce_to %s %s count %zu root %d nb %d: %s", dc_op_name((dc_op)op),
          dc_dtype_name(t), n, root, nb, dc_status_name(st));
  }
  free(a), free(b), free(want);
}

static int mismatch(const char *what) {
  dc_group_set_timeout(g, 60);
  char buf[64 * 8] = {0}, out[64 * 8];
  double t0 = mp_mono();
  dc_status st;
  if (!strcmp(what, "root"))
    st = dc_gather(g, buf, out, 1, DC_INT32, rank == 0 ? 0 : 1);
  else if (!strcmp(what, "count"))
    st = dc_scatter(g, buf, out, rank == 0 ? 5 : 6, DC_INT32, 0);
  else
    st = rank == 0 ? dc_reduce_to(g, buf, out, 4, DC_FLOAT32, DC_SUM, 0)
                   : dc_all_sum(g, buf, out, 4, DC_FLOAT32);
  double dt = mp_mono() - t0;
  printf("rank %d: %s after %.3f s: %s\n", rank, dc_status_name(st), dt,
         dc_group_last_error(g));
  /* A gather's sender whose neighbours agree may finish its part first:
   * then the others' abort reaches it at its next call. */
  int sender_done = st == DC_OK && !strcmp(what, "root") && rank != 0;
  CHECK(st == DC_ERR_MISMATCH || sender_done, "%s mismatch gave %s", what,
        dc_status_name(st));
  if (!strcmp(what, "op")) /* both ops named, not "unknown op" */
    CHECK(strstr(dc_group_last_error(g), "reduce_to of 4 float32") &&
              strstr(dc_group_last_error(g), "all_sum of 4 float32"),
          "the mismatch does not name both ops: %s", dc_group_last_error(g));
  dc_status next = dc_barrier(g);
  dt = mp_mono() - t0;
  CHECK(dt < 5.0, "%s mismatch took %.3f s", what, dt);
  CHECK(next == st || (sender_done && next != DC_OK),
        "group not poisoned: next call gave %s", dc_status_name(next));
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

static int neighbours(void) {
  int64_t x[64] = {0}, y[64 * 64];
  dc_status st[3] = {dc_all_to_all(g, x, y, 1, DC_INT64),
                     dc_gather(g, x, y, 1, DC_INT64, 0),
                     dc_scatter(g, y, x, 1, DC_INT64, 1)};
  for (int i = 0; i < 3; i++)
    CHECK(st[i] == DC_ERR_NOT_SUPPORTED, "op %d gave %s", i,
          dc_status_name(st[i]));
  CHECK(strstr(dc_group_last_error(g), "DISTCOMM_RING_NEIGHBOURS") != NULL,
        "detail does not name the setting");
  x[0] = 1;
  dc_status s2 = dc_reduce_to(g, x, y, 1, DC_INT64, DC_SUM, 0);
  CHECK(s2 == DC_OK && (rank != 0 || y[0] == size), "reduce_to: %s",
        dc_status_name(s2));
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  g = mp_init_or_die("conf_ops");
  rank = dc_group_rank(g);
  size = dc_group_size(g);
  if (argc > 2 && !strcmp(argv[1], "mismatch"))
    return mismatch(argv[2]);
  if (argc > 1 && !strcmp(argv[1], "neighbours"))
    return neighbours();
  size_t large = 100003;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--size") && i + 1 < argc &&
        (int)mp_parse_size("--size", argv[++i]) != size) {
      printf("rank %d: FAIL world has %d ranks, want %s\n", rank, size,
             argv[i]);
      return 1;
    }
    if (!strcmp(argv[i], "--quick"))
      large = 20011;
  }
  const size_t counts[] = {0, 1, 7, large};
  int tag = 1;
  for (int t = 0; t < DC_DTYPE_COUNT; t++)
    for (size_t c = 0; c < 4; c++)
      for (int nb = 0; nb < 2; nb++, tag += 4) {
        all_to_all((dc_dtype)t, counts[c], nb, tag);
        all_to_allv((dc_dtype)t, counts[c], nb, tag);
        for (int root = 0; root < size; root++)
          rooted((dc_dtype)t, counts[c], root, nb, tag + 1);
      }
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}
