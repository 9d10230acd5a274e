/* Conformance: every dtype x op x count through every collective, checked
 * bit for bit against a reference that each rank computes itself.
 *
 * Every rank's input comes from mp_key(rank, index, dtype, tag), so any rank
 * can rebuild any other rank's input and compute the expected result.
 * Reductions use small integers (sums in [-24, 24], products of at most three
 * factors of magnitude 2 or |1+i|): every partial result is exact in every
 * dtype, float16 and bfloat16 included, so the result does not depend on the
 * order in which the library reduces, and bitwise comparison is valid (but
 * for the sign of zero in complex products: see first_diff). Data
 * that is only moved (gather, broadcast, send/recv) is random bytes.
 *
 * Usage: conformance [--size N] [--quick] [--big] [--counts a,b,...]
 *                    [--only all_reduce] [--hold FILE]
 *   --size N   fail unless the world group has N ranks (catches a silent
 *              fall back to a singleton group)
 *   --quick    65537 instead of 1000003 (for 8 oversubscribed ranks)
 *   --big      only the all_sum of more than 2 GiB of uint8
 *   --only all_reduce   all_reduce alone (every dtype, op and count), for
 *              tests of an all_reduce path on many ranks
 *   --hold FILE  after the checks, keep running small all_sums until rank 0
 *              sees FILE (at most 60 s): a test probes the job while it
 *              is surely still running collectives
 * Prints "rank R/N: K checks passed, F failed"; exits 1 on any failure. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"

#define MAX_REPORTS 8
#define MIB_COUNT ((size_t)-1) /* placeholder count: 1 MiB of the dtype */

enum { TAG_SCATTER = 8, TAG_GATHER = 16, TAG_BCAST, TAG_JUNK, TAG_P2P = 32 };

typedef struct val {
  int64_t re, im;
} val;

typedef struct conf {
  dc_group *g;
  int rank, size;
  long pass, fail;
  size_t counts[16];
  int ncounts;
  int only_all_reduce;
} conf;

/* ---- results ----------------------------------------------------------- */

static void failf(conf *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void failf(conf *c, const char *fmt, ...) {
  if (c->fail++ >= MAX_REPORTS)
    return;
  va_list ap;
  va_start(ap, fmt);
  printf("rank %d/%d: FAIL ", c->rank, c->size);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

static uint64_t elem_bits(const void *p, size_t es) {
  uint64_t v = 0;
  memcpy(&v, p, es < sizeof v ? es : sizeof v); /* little-endian host */
  return v;
}

/* One check: the call returned want. */
static int check_status(conf *c, const char *what, dc_dtype t, size_t n,
                        dc_status st, dc_status want) {
  if (st == want) {
    c->pass++;
    return 1;
  }
  failf(c, "%s %s count %zu: returned %s, expected %s (%s)", what,
        dc_dtype_name(t), n, dc_status_name(st), dc_status_name(want),
        dc_group_last_error(c->g));
  return 0;
}

/* Index of the first element that differs, n when none. Bitwise, except
 * complex64, compared as float32 values: a complex product's zero parts get
 * a sign that depends on the order of the factors ((0,1)(0,1)(-1,0) gives
 * (1,-0), (0,1)(-1,0)(0,1) gives (1,+0)), and any order is allowed. */
static size_t first_diff(const void *got, const void *exp, size_t n,
                         dc_dtype t) {
  size_t es = dc_dtype_size(t);
  if (memcmp(got, exp, n * es) == 0)
    return n;
  for (size_t i = 0; i < n; i++) {
    const char *g = (const char *)got + i * es, *e = (const char *)exp + i * es;
    if (t == DC_COMPLEX64) {
      float gz[2], ez[2];
      memcpy(gz, g, sizeof gz);
      memcpy(ez, e, sizeof ez);
      if (gz[0] != ez[0] || gz[1] != ez[1])
        return i;
    } else if (memcmp(g, e, es) != 0) {
      return i;
    }
  }
  return n;
}

/* One check: got equals exp; names the first wrong element. */
static void check_data(conf *c, const char *what, dc_dtype t, size_t n,
                       const void *got, const void *exp) {
  size_t es = dc_dtype_size(t), i = first_diff(got, exp, n, t);
  if (i == n) {
    c->pass++;
    return;
  }
  failf(c, "%s %s count %zu: element %zu expected 0x%" PRIx64 " got 0x%" PRIx64,
        what, dc_dtype_name(t), n, i, elem_bits((const char *)exp + i * es, es),
        elem_bits((const char *)got + i * es, es));
}

/* ---- data -------------------------------------------------------------- */

static int is_unsigned(dc_dtype t) { return t >= DC_UINT8 && t <= DC_UINT64; }

/* binary16 bits of a small integer (|v| <= 2048, so exact). */
static uint16_t half_of_int(int64_t v) {
  if (v == 0)
    return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  uint64_t a = (uint64_t)(v < 0 ? -v : v);
  int e = 63 - __builtin_clzll(a);
  uint16_t mant = (uint16_t)(((a << 10) >> e) & 0x3ff);
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | mant);
}

/* bfloat16 is the top half of a float32; exact for small integers. */
static uint16_t bf16_of_int(int64_t v) {
  float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}

#define PUT(type, expr)                                                        \
  do {                                                                         \
    type put_ = (type)(expr);                                                  \
    memcpy(dst, &put_, sizeof put_);                                           \
  } while (0)

static void encode(dc_dtype t, val v, void *dst) {
  switch (t) {
  case DC_BOOL:
    PUT(uint8_t, v.re != 0);
    break;
  case DC_INT8:
    PUT(int8_t, v.re);
    break;
  case DC_INT16:
    PUT(int16_t, v.re);
    break;
  case DC_INT32:
    PUT(int32_t, v.re);
    break;
  case DC_INT64:
    PUT(int64_t, v.re);
    break;
  case DC_UINT8:
    PUT(uint8_t, v.re);
    break;
  case DC_UINT16:
    PUT(uint16_t, v.re);
    break;
  case DC_UINT32:
    PUT(uint32_t, v.re);
    break;
  case DC_UINT64:
    PUT(uint64_t, v.re);
    break;
  case DC_FLOAT16:
    PUT(uint16_t, half_of_int(v.re));
    break;
  case DC_BFLOAT16:
    PUT(uint16_t, bf16_of_int(v.re));
    break;
  case DC_FLOAT32:
    PUT(float, v.re);
    break;
  case DC_FLOAT64:
    PUT(double, v.re);
    break;
  case DC_COMPLEX64: {
    float z[2] = {(float)v.re, (float)v.im};
    memcpy(dst, z, sizeof z);
    break;
  }
  default:
    break;
  }
}

/* Product inputs: at most three ranks give a factor other than a unit, so
 * products stay tiny and exact whatever the order. */
static val prod_input(int rank, uint64_t h, dc_dtype t) {
  static const val unit[4] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
  int big = rank < 3 && (h >> 40) % 3 == 0;
  if (t == DC_COMPLEX64)
    return big ? (val){1, 1} : unit[h % 4];
  if (big)
    return (val){2, 0};
  return (val){is_unsigned(t) || (h & 1) ? 1 : -1, 0};
}

static val arith_input(int rank, size_t i, dc_dtype t, dc_op op, int tag) {
  uint64_t h = mp_key(rank, i, (int)t, tag + (int)op);
  if (t == DC_BOOL) /* or-like ops see mostly 0, and-like ones mostly 1 */
    return (val){(op == DC_SUM || op == DC_MAX) ? h % 4 == 0 : h % 8 != 0, 0};
  if (op == DC_PROD)
    return prod_input(rank, h, t);
  val v = {(int64_t)(h % 7), 0};
  if (!is_unsigned(t))
    v.re -= 3;
  if (t == DC_COMPLEX64)
    v.im = (int64_t)((h >> 32) % 7) - 3;
  return v;
}

static val combine(val a, val b, dc_dtype t, dc_op op) {
  switch (op) {
  case DC_SUM:
    if (t == DC_BOOL)
      return (val){a.re | b.re, 0};
    return (val){a.re + b.re, a.im + b.im};
  case DC_MAX:
    return a.re > b.re ? a : b;
  case DC_MIN:
    return a.re < b.re ? a : b;
  default:
    return (val){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
}

/* This rank's input for elements base .. base + n - 1. */
static void fill_arith(void *buf, size_t n, size_t base, int rank, dc_dtype t,
                       dc_op op, int tag) {
  size_t es = dc_dtype_size(t);
  for (size_t i = 0; i < n; i++)
    encode(t, arith_input(rank, base + i, t, op, tag), (char *)buf + i * es);
}

/* The reduction over all ranks of elements base .. base + n - 1. */
static void ref_arith(const conf *c, void *buf, size_t n, size_t base,
                      dc_dtype t, dc_op op, int tag) {
  size_t es = dc_dtype_size(t);
  for (size_t i = 0; i < n; i++) {
    val acc = arith_input(0, base + i, t, op, tag);
    for (int r = 1; r < c->size; r++)
      acc = combine(acc, arith_input(r, base + i, t, op, tag), t, op);
    encode(t, acc, (char *)buf + i * es);
  }
}

/* Random bytes for data that is only moved (bool stays 0/1). */
static void fill_bytes(void *buf, size_t n, int rank, dc_dtype t, int tag) {
  size_t es = dc_dtype_size(t);
  for (size_t i = 0; i < n; i++) {
    uint64_t h = mp_key(rank, i, (int)t, tag);
    if (t == DC_BOOL)
      h &= 1;
    memcpy((char *)buf + i * es, &h, es);
  }
}

/* ---- collectives ------------------------------------------------------- */

static int unsupported(dc_dtype t, dc_op op) {
  return t == DC_COMPLEX64 && (op == DC_MAX || op == DC_MIN);
}

static void test_all_reduce(conf *c, dc_dtype t, dc_op op, size_t n) {
  size_t bytes = n * dc_dtype_size(t);
  char what[64];
  void *send = mp_alloc(bytes), *recv = mp_alloc(bytes), *exp = mp_alloc(bytes),
       *keep = mp_alloc(bytes);
  fill_arith(send, n, 0, c->rank, t, op, 0);
  memcpy(keep, send, bytes);
  memset(recv, 0xA5, bytes);
  snprintf(what, sizeof what, "all_reduce(%s) out of place", dc_op_name(op));
  dc_status st = dc_all_reduce(c->g, send, recv, n, t, op);
  if (unsupported(t, op)) {
    check_status(c, what, t, n, st, DC_ERR_NOT_SUPPORTED);
  } else if (check_status(c, what, t, n, st, DC_OK)) {
    ref_arith(c, exp, n, 0, t, op, 0);
    check_data(c, what, t, n, recv, exp);
    check_data(c, "all_reduce send buffer kept", t, n, send, keep);
    snprintf(what, sizeof what, "all_reduce(%s) in place", dc_op_name(op));
    if (check_status(c, what, t, n, dc_all_reduce(c->g, send, send, n, t, op),
                     DC_OK))
      check_data(c, what, t, n, send, exp);
  }
  free(send), free(recv), free(exp), free(keep);
}

static void test_reduce_scatter(conf *c, dc_dtype t, dc_op op, size_t n) {
  size_t es = dc_dtype_size(t), total = n * (size_t)c->size;
  char what[64];
  void *send = mp_alloc(total * es), *recv = mp_alloc(n * es),
       *exp = mp_alloc(n * es);
  fill_arith(send, total, 0, c->rank, t, op, TAG_SCATTER);
  memset(recv, 0x5A, n * es);
  snprintf(what, sizeof what, "reduce_scatter(%s)", dc_op_name(op));
  dc_status st = dc_reduce_scatter(c->g, send, recv, n, t, op);
  if (unsupported(t, op)) {
    check_status(c, what, t, n, st, DC_ERR_NOT_SUPPORTED);
  } else if (check_status(c, what, t, n, st, DC_OK)) {
    ref_arith(c, exp, n, (size_t)c->rank * n, t, op, TAG_SCATTER);
    check_data(c, what, t, n, recv, exp);
  }
  free(send), free(recv), free(exp);
}

static void test_all_gather(conf *c, dc_dtype t, size_t n) {
  size_t es = dc_dtype_size(t), total = n * (size_t)c->size;
  void *send = mp_alloc(n * es), *recv = mp_alloc(total * es),
       *exp = mp_alloc(total * es);
  fill_bytes(send, n, c->rank, t, TAG_GATHER);
  memset(recv, 0xC3, total * es);
  dc_status st = dc_all_gather(c->g, send, recv, n, t);
  if (check_status(c, "all_gather", t, n, st, DC_OK)) {
    for (int r = 0; r < c->size; r++)
      fill_bytes((char *)exp + (size_t)r * n * es, n, r, t, TAG_GATHER);
    check_data(c, "all_gather", t, total, recv, exp);
  }
  free(send), free(recv), free(exp);
}

static void test_broadcast(conf *c, dc_dtype t, size_t n) {
  size_t bytes = n * dc_dtype_size(t);
  void *buf = mp_alloc(bytes), *exp = mp_alloc(bytes);
  for (int root = 0; root < c->size; root++) {
    char what[64];
    snprintf(what, sizeof what, "broadcast(root %d)", root);
    /* Non-roots start with their own junk, so a no-op is caught. */
    fill_bytes(buf, n, c->rank, t, c->rank == root ? TAG_BCAST : TAG_JUNK);
    if (check_status(c, what, t, n, dc_broadcast(c->g, buf, n, t, root),
                     DC_OK)) {
      fill_bytes(exp, n, root, t, TAG_BCAST);
      check_data(c, what, t, n, buf, exp);
    }
  }
  free(buf), free(exp);
}

/* With DISTCOMM_RING_NEIGHBOURS=1 or MLX_JACCL_RING=1 (more than 2 ranks)
 * only ring neighbours are connected: send/recv between others must fail at
 * once, not block. */
static int linked(const conf *c, int a, int b) {
  const char *e = getenv("DISTCOMM_RING_NEIGHBOURS");
  const char *j = getenv("MLX_JACCL_RING");
  int ring = (e && strcmp(e, "1") == 0) || (j && strcmp(j, "1") == 0);
  if (!ring || c->size <= 2)
    return 1;
  return (a + 1) % c->size == b || (b + 1) % c->size == a;
}

/* Every ordered pair in one global order: the earliest pair not yet done is
 * always the next call of both its ranks, so blocking sends cannot deadlock. */
static void test_send_recv(conf *c, dc_dtype t, size_t n) {
  size_t bytes = n * dc_dtype_size(t);
  void *buf = mp_alloc(bytes), *exp = mp_alloc(bytes);
  for (int s = 0; s < c->size; s++) {
    for (int d = 0; d < c->size; d++) {
      if (s == d || (c->rank != s && c->rank != d))
        continue;
      char what[64];
      snprintf(what, sizeof what, "send/recv %d->%d", s, d);
      if (!linked(c, s, d)) {
        dc_status st = c->rank == s ? dc_send(c->g, buf, n, t, d)
                                    : dc_recv(c->g, buf, n, t, s);
        check_status(c, what, t, n, st, DC_ERR_NOT_SUPPORTED);
        continue;
      }
      if (c->rank == s) {
        fill_bytes(buf, n, s, t, TAG_P2P + d);
        check_status(c, what, t, n, dc_send(c->g, buf, n, t, d), DC_OK);
        continue;
      }
      fill_bytes(buf, n, d, t, TAG_JUNK);
      if (check_status(c, what, t, n, dc_recv(c->g, buf, n, t, s), DC_OK)) {
        fill_bytes(exp, n, s, t, TAG_P2P + d);
        check_data(c, what, t, n, buf, exp);
      }
    }
  }
  free(buf), free(exp);
}

static void run_dtype(conf *c, dc_dtype t) {
  for (int k = 0; k < c->ncounts; k++) {
    size_t n = c->counts[k];
    if (n == MIB_COUNT)
      n = ((size_t)1 << 20) / dc_dtype_size(t);
    for (int op = 0; op < DC_OP_COUNT; op++) {
      test_all_reduce(c, t, (dc_op)op, n);
      if (!c->only_all_reduce)
        test_reduce_scatter(c, t, (dc_op)op, n);
    }
    if (c->only_all_reduce)
      continue;
    test_all_gather(c, t, n);
    test_broadcast(c, t, n);
    test_send_recv(c, t, n);
  }
  check_status(c, "barrier", t, 0, dc_barrier(c->g), DC_OK);
}

/* ---- more than 2 GiB --------------------------------------------------- */

/* Not periodic in any power of two up to 2^31, so a chunk that lands at the
 * wrong offset (e.g. a 32-bit overflow) changes the bytes. */
static uint8_t big_base(size_t i) {
  return (uint8_t)(i + (i >> 12) * 7 + (i >> 24) * 13 + (i >> 31) * 101);
}

static void test_big(conf *c) {
  size_t n = ((size_t)2 << 30) + 4099; /* uint8: count itself > 2^31 */
  uint8_t *send = mp_alloc(n), *recv = mp_alloc(n);
  uint8_t offset = (uint8_t)(41 * c->rank);
  for (size_t i = 0; i < n; i++)
    send[i] = (uint8_t)(big_base(i) + offset);
  memset(recv, 0xA5, n);
  dc_status st = dc_all_sum(c->g, send, recv, n, DC_UINT8);
  if (check_status(c, "all_sum > 2 GiB", DC_UINT8, n, st, DC_OK)) {
    /* sum over r of (base + 41 r) = size * base + 41 * size(size-1)/2 */
    size_t sz = (size_t)c->size;
    uint8_t add = (uint8_t)(41 * sz * (sz - 1) / 2);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (recv[i] != (uint8_t)(sz * big_base(i) + add))
        bad = i;
    if (bad == n)
      c->pass++;
    else
      failf(c,
            "all_sum > 2 GiB uint8 count %zu: element %zu expected 0x%x "
            "got 0x%x",
            n, bad, (uint8_t)(sz * big_base(bad) + add), recv[bad]);
  }
  free(send), free(recv);
}

/* ---- driver ------------------------------------------------------------ */

static void add_count(conf *c, size_t n) {
  for (int i = 0; i < c->ncounts; i++)
    if (c->counts[i] == n)
      return;
  if (c->ncounts < (int)(sizeof c->counts / sizeof c->counts[0]))
    c->counts[c->ncounts++] = n;
}

/* 0, 1, 7, fewer than the ranks, a small non-multiple of the rank count,
 * 16411 (on 2 or 3 ranks an all_gather of 4-byte elements small enough
 * for a direct exchange, large enough for single copy), one MiB of the
 * dtype, and a large count no rank count divides. */
static void default_counts(conf *c, int quick) {
  size_t sz = (size_t)c->size;
  add_count(c, 0);
  add_count(c, 1);
  add_count(c, 7);
  add_count(c, sz - 1);
  add_count(c, sz / 2);
  add_count(c, 3 * sz + 1);
  add_count(c, 16411);
  add_count(c, MIB_COUNT);
  add_count(c, quick ? 65537 : 1000003); /* neither divisible by 2..8 */
}

/* Small all_sums until rank 0 sees path or 60 s pass; rank 0's word
 * decides for everyone, so every rank runs the same number of them. */
static void hold_until(conf *c, const char *path) {
  for (int i = 0; i < 6000; i++) {
    int32_t stop = c->rank == 0 && (access(path, F_OK) == 0 || i == 5999);
    int32_t any = 0;
    dc_status st = dc_all_sum(c->g, &stop, &any, 1, DC_INT32);
    if (st != DC_OK) {
      failf(c, "--hold: all_sum: %s", dc_group_last_error(c->g));
      return;
    }
    if (any)
      return;
    usleep(10000);
  }
}

static void parse_counts(conf *c, char *list) {
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
    add_count(c, strcmp(tok, "mib") == 0 ? MIB_COUNT
                                         : mp_parse_size("count", tok));
}

int main(int argc, char **argv) {
  conf c = {0};
  int quick = 0, big = 0, want_size = 0;
  char *counts = NULL;
  const char *hold = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      quick = 1;
    else if (strcmp(argv[i], "--big") == 0)
      big = 1;
    else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
      want_size = (int)mp_parse_size("--size", argv[++i]);
    else if (strcmp(argv[i], "--counts") == 0 && i + 1 < argc)
      counts = argv[++i];
    else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
      hold = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc &&
             strcmp(argv[i + 1], "all_reduce") == 0)
      c.only_all_reduce = 1, i++;
    else {
      fprintf(stderr, "usage: conformance [--size N] [--quick] [--big] "
                      "[--counts a,b,...|mib] [--only all_reduce] "
                      "[--hold FILE]\n");
      return 2;
    }
  }
  c.g = mp_init_or_die("conformance");
  c.rank = dc_group_rank(c.g);
  c.size = dc_group_size(c.g);
  if (want_size && c.size != want_size)
    failf(&c, "group size is %d, expected %d (backend %s)", c.size, want_size,
          dc_group_backend(c.g));
  if (counts)
    parse_counts(&c, counts);
  else
    default_counts(&c, quick);
  if (big)
    test_big(&c);
  else
    for (int t = 0; t < DC_DTYPE_COUNT; t++)
      run_dtype(&c, (dc_dtype)t);
  if (hold)
    hold_until(&c, hold);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", c.rank, c.size, c.pass,
         c.fail);
  dc_group_free(c.g);
  return c.fail ? 1 : 0;
}
