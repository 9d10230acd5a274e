/* Unit tests of the reduction kernels (src/kernels/reduce.c) and the dtype
 * helpers (src/kernels/dtype.c): every dtype x op against a scalar reference
 * written independently here, plus the edge cases of rounding, NaN, signed
 * zero, wraparound and argument checking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/reduce.h"
#include "distcomm.h"

/* Test hook in reduce.c (not in reduce.h): force the portable float16 and
 * bfloat16 paths. */
int dc_reduce_force_portable(int on);

/* ---- helpers --------------------------------------------------------------
 */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float fof(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static double dof(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* float16 reference: the compiler's own _Float16 (libgcc's soft-float
 * conversions on baseline x86-64), independent of reduce.c. */
static float ref_h2f(uint16_t h) {
  _Float16 x;
  memcpy(&x, &h, 2);
  return (float)x;
}
static uint16_t ref_f2h(float f) {
  _Float16 x = (_Float16)f;
  uint16_t h;
  memcpy(&h, &x, 2);
  return h;
}

/* bfloat16 reference: round in double to 8 significant bits (nearest even via
 * nearbyint in the default rounding mode), then take the top half. */
static float ref_b2f(uint16_t b) { return fof((uint32_t)b << 16); }
static uint16_t ref_f2b(float f) {
  if (isnan(f))
    return 0x7fc0;
  if (isinf(f) || f == 0)
    return (uint16_t)(fbits(f) >> 16);
  int e;
  frexp(f, &e); /* |f| = m * 2^e, 0.5 <= m < 1 */
  int lo = e - 1 < -126 ? -126 : e - 1;
  double q = ldexp(1.0, lo - 7);
  double r = nearbyint((double)f / q) * q;
  return (uint16_t)(fbits((float)r) >> 16); /* (float) of 2^128 is inf */
}

/* max/min of floats, written with branches: NaN wins, -0 < +0. When both
 * are NaN any NaN will do (the caller compares NaN-tolerantly). */
static double ref_fmax(double x, double y, int is_max) {
  if (isnan(x))
    return x;
  if (isnan(y))
    return y;
  if (x == y && x == 0) { /* max is -0 only if both are; min if either */
    int neg = is_max ? signbit(x) && signbit(y) : signbit(x) || signbit(y);
    return neg ? -0.0 : 0.0;
  }
  if (is_max)
    return x > y ? x : y;
  return x < y ? x : y;
}
static float ref_fmaxf(float x, float y, int is_max) {
  if (isnan(x))
    return x;
  if (isnan(y))
    return y;
  return (float)ref_fmax(x, y, is_max);
}
static float ref_f32(float x, float y, dc_op op) {
  switch (op) {
  case DC_SUM:
    return x + y;
  case DC_PROD:
    return x * y;
  default:
    return ref_fmaxf(x, y, op == DC_MAX);
  }
}

/* Load and store elements of any dtype as 64-bit patterns. */
static uint64_t ld(const unsigned char *p, size_t esz) {
  uint64_t v = 0;
  memcpy(&v, p, esz); /* little-endian host */
  return v;
}
static int64_t sext(uint64_t v, size_t esz) {
  unsigned sh = (unsigned)(64 - 8 * esz);
  return (int64_t)(v << sh) >> sh;
}

/* The reference: one element of x op y. */
static void ref_elem(dc_dtype dt, dc_op op, unsigned char *out,
                     const unsigned char *xp, const unsigned char *yp) {
  size_t esz = dc_dtype_size(dt);
  uint64_t x = ld(xp, esz), y = ld(yp, esz), r = 0;
  int is_max = op == DC_MAX;
  switch (dt) {
  case DC_BOOL:
    r = (op == DC_SUM || op == DC_MAX) ? (x || y) : (x && y);
    break;
  case DC_INT8:
  case DC_INT16:
  case DC_INT32:
  case DC_INT64: {
    int64_t a = sext(x, esz), b = sext(y, esz);
    if (op == DC_SUM)
      r = x + y;
    else if (op == DC_PROD)
      r = x * y; /* low bits are the same signed */
    else
      r = (uint64_t)((a > b) == is_max ? a : b);
    break;
  }
  case DC_UINT8:
  case DC_UINT16:
  case DC_UINT32:
  case DC_UINT64:
    if (op == DC_SUM)
      r = x + y;
    else if (op == DC_PROD)
      r = x * y;
    else
      r = (x > y) == is_max ? x : y;
    break;
  case DC_FLOAT16:
    r = ref_f2h(ref_f32(ref_h2f((uint16_t)x), ref_h2f((uint16_t)y), op));
    break;
  case DC_BFLOAT16:
    r = ref_f2b(ref_f32(ref_b2f((uint16_t)x), ref_b2f((uint16_t)y), op));
    break;
  case DC_FLOAT32:
    r = fbits(ref_f32(fof((uint32_t)x), fof((uint32_t)y), op));
    break;
  case DC_FLOAT64: {
    double a = dof(x), b = dof(y);
    double d = op == DC_SUM    ? a + b
               : op == DC_PROD ? a * b
                               : ref_fmax(a, b, is_max);
    r = dbits(d);
    break;
  }
  case DC_COMPLEX64: {
    float ar = fof((uint32_t)x), ai = fof((uint32_t)(x >> 32));
    float br = fof((uint32_t)y), bi = fof((uint32_t)(y >> 32));
    float re, im;
    if (op == DC_SUM) {
      re = ar + br;
      im = ai + bi;
    } else { /* each product rounded to float, no fusing */
      volatile float p1 = ar * br, p2 = ai * bi, p3 = ar * bi, p4 = ai * br;
      re = p1 - p2;
      im = p3 + p4;
    }
    r = fbits(re) | (uint64_t)fbits(im) << 32;
    break;
  }
  default:
    fail();
  }
  memcpy(out, &r, esz);
}

static int is_nan_elem(dc_dtype dt, uint64_t v) {
  switch (dt) {
  case DC_FLOAT16:
    return (v & 0x7fff) > 0x7c00;
  case DC_BFLOAT16:
    return (v & 0x7fff) > 0x7f80;
  case DC_FLOAT32:
    return (v & 0x7fffffff) > 0x7f800000;
  case DC_FLOAT64:
    return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
  default:
    return 0;
  }
}

/* Equal bits, except that any NaN matches a NaN (payloads of NaN results of
 * arithmetic are the FPU's business). */
static int same_elem(dc_dtype dt, const unsigned char *got,
                     const unsigned char *want) {
  size_t esz = dc_dtype_size(dt);
  if (dt == DC_COMPLEX64)
    return same_elem(DC_FLOAT32, got, want) &&
           same_elem(DC_FLOAT32, got + 4, want + 4);
  uint64_t g = ld(got, esz), w = ld(want, esz);
  if (is_nan_elem(dt, w))
    return is_nan_elem(dt, g);
  return g == w;
}

/* Random element: raw bits, biased towards interesting float values. */
static void fill_elem(dc_dtype dt, unsigned char *p) {
  static const uint32_t f32_special[] = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001,
      0x7f800001, 0x00000001, 0x807fffff, 0x7f7fffff, 0x3f800000, 0xbf800000};
  static const uint16_t f16_special[] = {0x0000, 0x8000, 0x7c00, 0xfc00,
                                         0x7e00, 0x7c01, 0x0001, 0x83ff,
                                         0x7bff, 0x3c00, 0xbc00, 0x3c01};
  uint64_t v = rnd();
  size_t esz = dc_dtype_size(dt);
  unsigned pick = (unsigned)(rnd() % 8);
  if (dt == DC_FLOAT32 && pick == 0)
    v = f32_special[rnd() % 12];
  if (dt == DC_FLOAT32 && pick == 1) /* moderate magnitudes */
    v = fbits((float)((int64_t)(rnd() % 2001) - 1000) / 8.0f);
  if (dt == DC_FLOAT64 && pick == 1)
    v = dbits((double)((int64_t)(rnd() % 2001) - 1000) / 8.0);
  if (dt == DC_FLOAT64 && pick == 0)
    v = dbits((double)fof(f32_special[rnd() % 12]));
  if ((dt == DC_FLOAT16 || dt == DC_BFLOAT16) && pick == 0)
    v = f16_special[rnd() % 12];
  if (dt == DC_BFLOAT16 && pick == 1)
    v = fbits((float)((int)(rnd() % 201) - 100)) >> 16;
  if (dt == DC_BOOL && pick < 4)
    v &= 1; /* mostly 0/1, sometimes any byte */
  memcpy(p, &v, esz);
}

/* ---- every dtype x op x count x alignment against the reference ---------- */

static const size_t counts[] = {0, 1, 7, 8, 31, 1003, 5000};

static void check_case(dc_dtype dt, dc_op op, size_t n, size_t off) {
  size_t esz = dc_dtype_size(dt), bytes = n * esz, guard = 16;
  unsigned char *a = malloc(bytes + 2 * guard + 8);
  unsigned char *b = malloc(bytes + 2 * guard + 8);
  unsigned char *a0 = malloc(bytes + 1), *b0 = malloc(bytes + 1);
  unsigned char *want = malloc(bytes + 1), *self = malloc(bytes + 1);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(a0);
  assert_non_null(b0);
  assert_non_null(want);
  assert_non_null(self);
  unsigned char *pa = a + guard + off, *pb = b + guard + off + 1; /* odd */
  memset(a, 0xa5, bytes + 2 * guard + 8);
  for (size_t i = 0; i < n; i++) {
    fill_elem(dt, a0 + i * esz);
    fill_elem(dt, b0 + i * esz);
    if (rnd() % 8 == 0) /* equal and +-0 pairs exercise max/min ties */
      memcpy(b0 + i * esz, a0 + i * esz, esz);
    ref_elem(dt, op, want + i * esz, a0 + i * esz, b0 + i * esz);
    ref_elem(dt, op, self + i * esz, a0 + i * esz, a0 + i * esz);
  }
  if (n) {
    memcpy(pa, a0, bytes);
    memcpy(pb, b0, bytes);
  }
  assert_int_equal(dc_reduce_local(pa, pb, n, dt, op), DC_OK);
  for (size_t i = 0; i < n; i++) {
    if (!same_elem(dt, pa + i * esz, want + i * esz)) {
      uint64_t g = ld(pa + i * esz, esz), w = ld(want + i * esz, esz);
      uint64_t x = ld(a0 + i * esz, esz), y = ld(b0 + i * esz, esz);
      fail_msg("%s %s n=%zu i=%zu: %#llx op %#llx = %#llx, want %#llx",
               dc_dtype_name(dt), dc_op_name(op), n, i, (unsigned long long)x,
               (unsigned long long)y, (unsigned long long)g,
               (unsigned long long)w);
    }
  }
  /* Nothing outside [pa, pa + bytes) was written. */
  for (size_t i = 0; i < guard + off; i++)
    assert_int_equal(a[i], 0xa5);
  for (size_t i = 0; i < guard; i++)
    assert_int_equal(pa[bytes + i], 0xa5);

  /* The other operand order gives the same bits (max/min, integers) or the
   * same value (float sum/prod, where the FPU picks a NaN's payload). */
  if (n) {
    memcpy(pb, b0, bytes);
    unsigned char *first = malloc(bytes);
    assert_non_null(first);
    memcpy(first, pa, bytes);
    memcpy(pa, a0, bytes);
    assert_int_equal(dc_reduce_local(pb, pa, n, dt, op), DC_OK);
    int exact = op == DC_MAX || op == DC_MIN;
    for (size_t i = 0; i < n; i++) {
      int ok = exact ? memcmp(pb + i * esz, first + i * esz, esz) == 0
                     : same_elem(dt, pb + i * esz, first + i * esz);
      if (!ok)
        fail_msg("%s %s n=%zu i=%zu depends on operand order",
                 dc_dtype_name(dt), dc_op_name(op), n, i);
    }
    free(first);
  }

  /* In place: inout == in. */
  if (n)
    memcpy(pa, a0, bytes);
  assert_int_equal(dc_reduce_local(pa, pa, n, dt, op), DC_OK);
  for (size_t i = 0; i < n; i++)
    if (!same_elem(dt, pa + i * esz, self + i * esz))
      fail_msg("%s %s n=%zu i=%zu in place", dc_dtype_name(dt), dc_op_name(op),
               n, i);

  free(a);
  free(b);
  free(a0);
  free(b0);
  free(want);
  free(self);
}

static void check_all_ops(dc_dtype dt) {
  for (int op = 0; op < DC_OP_COUNT; op++) {
    if (dc_reduce_check(dt, (dc_op)op) != DC_OK)
      continue;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
      for (size_t off = 0; off < 4; off += 3)
        check_case(dt, (dc_op)op, counts[c], off);
  }
}

static void test_all_dtypes_ops(void **state) {
  (void)state;
  for (int dt = 0; dt < DC_DTYPE_COUNT; dt++)
    check_all_ops((dc_dtype)dt);
}

/* The same again through the portable float16/bfloat16 code, which the
 * dispatcher would not pick on an AVX2 machine. */
static void test_portable_lowp_paths(void **state) {
  (void)state;
  int old = dc_reduce_force_portable(1);
  check_all_ops(DC_FLOAT16);
  check_all_ops(DC_BFLOAT16);
  dc_reduce_force_portable(old);
}

/* ---- float16 / bfloat16 conversions and rounding ------------------------- */

static void test_half_conversions_exhaustive(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float got = dc_half_to_float((uint16_t)h), want = ref_h2f((uint16_t)h);
    if (isnan(want)) {
      assert_true(isnan(got));
      /* The payload survives the round trip (quieted). */
      assert_int_equal(dc_float_to_half(got), h | 0x0200);
    } else {
      assert_int_equal(fbits(got), fbits(want));
      assert_int_equal(dc_float_to_half(got), h);
    }
  }
  /* float -> half on a spread of bit patterns, plus every pattern near the
   * subnormal, normal and overflow boundaries. */
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
    float f = fof((uint32_t)u);
    uint16_t got = dc_float_to_half(f), want = ref_f2h(f);
    if (isnan(f))
      assert_true((got & 0x7fff) > 0x7c00);
    else if (got != want)
      fail_msg("float_to_half(%a [%#x]) = %#x, want %#x", (double)f,
               (unsigned)u, got, want);
  }
  static const uint32_t edges[] = {0x33000000, 0x33800000, 0x38800000,
                                   0x387fe000, 0x477fe000, 0x477ff000};
  for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
    for (uint32_t d = 0; d < 0x4000; d++) {
      for (int s = 0; s < 2; s++) {
        uint32_t u = (edges[e] - 0x2000 + d) | (uint32_t)s << 31;
        assert_int_equal(dc_float_to_half(fof(u)), ref_f2h(fof(u)));
      }
    }
}

static void test_bf16_conversions(void **state) {
  (void)state;
  for (uint32_t b = 0; b < 0x10000; b++) {
    float f = dc_bf16_to_float((uint16_t)b);
    assert_int_equal(fbits(f), b << 16);
    uint16_t back = dc_float_to_bf16(f);
    if ((b & 0x7fff) > 0x7f80)
      assert_int_equal(back, b | 0x40);
    else
      assert_int_equal(back, b);
  }
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) {
    float f = fof((uint32_t)u);
    uint16_t got = dc_float_to_bf16(f);
    if (isnan(f))
      assert_true((got & 0x7fff) > 0x7f80);
    else if (got != ref_f2b(f))
      fail_msg("float_to_bf16(%a) = %#x, want %#x", (double)f, got, ref_f2b(f));
  }
}

/* Run one 2-element-or-more reduction of 16-bit patterns, both paths. */
static void expect16(dc_dtype dt, dc_op op, uint16_t x, uint16_t y,
                     uint16_t want) {
  for (int soft = 0; soft < 2; soft++) {
    int old = dc_reduce_force_portable(soft);
    /* Pad to 9 elements so both the 8-wide body and the tail run. */
    uint16_t a[9], b[9];
    for (int i = 0; i < 9; i++) {
      a[i] = x;
      b[i] = y;
    }
    dc_reduce(a, b, 9, dt, op);
    for (int i = 0; i < 9; i++)
      if (a[i] != want)
        fail_msg("%s %s %#x, %#x = %#x, want %#x (soft=%d)", dc_dtype_name(dt),
                 dc_op_name(op), x, y, a[i], want, soft);
    dc_reduce(b, (uint16_t[9]){x, x, x, x, x, x, x, x, x}, 9, dt, op);
    for (int i = 0; i < 9; i++)
      if (b[i] != want)
        fail_msg("%s %s swapped %#x, %#x = %#x, want %#x", dc_dtype_name(dt),
                 dc_op_name(op), y, x, b[i], want);
    dc_reduce_force_portable(old);
  }
}

static void test_half_rounding(void **state) {
  (void)state;
  /* 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even is 1. */
  expect16(DC_FLOAT16, DC_SUM, 0x3c00, 0x1000, 0x3c00);
  /* (1 + 2^-10) + 2^-11: halfway, even is 1 + 2^-9. */
  expect16(DC_FLOAT16, DC_SUM, 0x3c01, 0x1000, 0x3c02);
  /* 65504 + 8 = 65512 rounds down; 65504 + 16 = 65520 rounds to inf. */
  expect16(DC_FLOAT16, DC_SUM, 0x7bff, 0x4800, 0x7bff);
  expect16(DC_FLOAT16, DC_SUM, 0x7bff, 0x4c00, 0x7c00);
  expect16(DC_FLOAT16, DC_SUM, 0xfbff, 0xcc00, 0xfc00);
  expect16(DC_FLOAT16, DC_PROD, 0x5bff, 0x5bff, 0x7bfe); /* 65472 */
  expect16(DC_FLOAT16, DC_PROD, 0x5c00, 0x5c00, 0x7c00); /* 256^2 */
  /* Subnormals: 2^-24 + 2^-24, largest subnormal + smallest = 2^-14. */
  expect16(DC_FLOAT16, DC_SUM, 0x0001, 0x0001, 0x0002);
  expect16(DC_FLOAT16, DC_SUM, 0x03ff, 0x0001, 0x0400);
  /* 2^-24 * 0.5 = 2^-25: halfway between 0 and 2^-24, even is 0. */
  expect16(DC_FLOAT16, DC_PROD, 0x0001, 0x3800, 0x0000);
  /* 3 * 2^-24 * 0.5: halfway between 1 and 2 ulps, even is 2. */
  expect16(DC_FLOAT16, DC_PROD, 0x0003, 0x3800, 0x0002);
  expect16(DC_FLOAT16, DC_PROD, 0x8001, 0x3800, 0x8000); /* -0 */
  /* inf - inf = NaN; inf + finite = inf. */
  expect16(DC_FLOAT16, DC_SUM, 0x7c00, 0x3c00, 0x7c00);
}

static void test_bf16_rounding(void **state) {
  (void)state;
  /* 1 + 2^-8: halfway between 1 and 1 + 2^-7, even is 1. */
  expect16(DC_BFLOAT16, DC_SUM, 0x3f80, 0x3b80, 0x3f80);
  /* (1 + 2^-7) + 2^-8: halfway, even is 1 + 2^-6. */
  expect16(DC_BFLOAT16, DC_SUM, 0x3f81, 0x3b80, 0x3f82);
  /* Largest finite * 2 overflows to inf. */
  expect16(DC_BFLOAT16, DC_PROD, 0x7f7f, 0x4000, 0x7f80);
  expect16(DC_BFLOAT16, DC_SUM, 0xff7f, 0xff7f, 0xff80);
  /* Subnormals add exactly. */
  expect16(DC_BFLOAT16, DC_SUM, 0x0001, 0x0001, 0x0002);
  expect16(DC_BFLOAT16, DC_SUM, 0x007f, 0x0001, 0x0080);
}

/* ---- NaN, infinities and signed zero in max/min ------------------------- */

static void expect_f32(dc_op op, float x, float y, uint32_t want) {
  float a[3] = {x, x, x}, b[3] = {y, y, y};
  dc_reduce(a, b, 3, DC_FLOAT32, op);
  assert_int_equal(fbits(a[2]), want);
  a[0] = x;
  dc_reduce(b, a, 1, DC_FLOAT32, op);
  assert_int_equal(fbits(b[0]), want);
}

static void expect_f64(dc_op op, double x, double y, uint64_t want) {
  double a[3] = {x, x, x}, b[3] = {y, y, y};
  dc_reduce(a, b, 3, DC_FLOAT64, op);
  assert_true(dbits(a[1]) == want);
  a[0] = x;
  dc_reduce(b, a, 1, DC_FLOAT64, op);
  assert_true(dbits(b[0]) == want);
}

static void test_max_min_nan_inf_zero(void **state) {
  (void)state;
  float qnan = fof(0x7fc00000), pnan = fof(0xffc01234);
  expect_f32(DC_MAX, qnan, 1.0f, 0x7fc00000);
  expect_f32(DC_MIN, qnan, 1.0f, 0x7fc00000);
  expect_f32(DC_MAX, pnan, -INFINITY, 0xffc01234); /* payload kept */
  expect_f32(DC_MIN, pnan, INFINITY, 0xffc01234);
  expect_f32(DC_MAX, INFINITY, -INFINITY, 0x7f800000);
  expect_f32(DC_MIN, INFINITY, -INFINITY, 0xff800000);
  expect_f32(DC_MAX, 0.0f, -0.0f, 0x00000000);
  expect_f32(DC_MIN, 0.0f, -0.0f, 0x80000000);
  expect_f32(DC_MAX, -0.0f, -0.0f, 0x80000000);
  expect_f32(DC_MIN, 0.0f, 0.0f, 0x00000000);
  expect_f32(DC_MAX, -2.0f, 3.0f, fbits(3.0f));
  expect_f32(DC_MIN, -2.0f, 3.0f, fbits(-2.0f));
  /* Two NaNs: some NaN, the same whichever comes first (checked inside). */
  float a = qnan, b = pnan;
  dc_reduce(&a, &b, 1, DC_FLOAT32, DC_MAX);
  assert_true(isnan(a));
  expect_f32(DC_MAX, qnan, pnan, fbits(a));

  double dn = dof(0x7ff8000000000123ull);
  expect_f64(DC_MAX, dn, 5.0, 0x7ff8000000000123ull);
  expect_f64(DC_MIN, -1.0, dn, 0x7ff8000000000123ull);
  expect_f64(DC_MAX, 0.0, -0.0, 0);
  expect_f64(DC_MIN, 0.0, -0.0, 0x8000000000000000ull);
  expect_f64(DC_MAX, -INFINITY, -1e300, dbits(-1e300));

  /* float16 / bfloat16 through both paths: NaN wins (quieted), zeros. */
  expect16(DC_FLOAT16, DC_MAX, 0x7e00, 0x3c00, 0x7e00);
  expect16(DC_FLOAT16, DC_MIN, 0x3c00, 0xfe01, 0xfe01);
  expect16(DC_FLOAT16, DC_MAX, 0x0000, 0x8000, 0x0000);
  expect16(DC_FLOAT16, DC_MIN, 0x0000, 0x8000, 0x8000);
  expect16(DC_FLOAT16, DC_MAX, 0xfc00, 0x7c00, 0x7c00);
  /* A signalling NaN comes back quiet, the same on both paths. */
  expect16(DC_FLOAT16, DC_MAX, 0x7c01, 0x3c00, 0x7e01);
  expect16(DC_FLOAT16, DC_SUM, 0xfd55, 0x3c00, 0xff55);
  expect16(DC_BFLOAT16, DC_MAX, 0x7f81, 0x3f80, 0x7fc1);
  expect16(DC_BFLOAT16, DC_SUM, 0xffa5, 0x3f80, 0xffe5);
  expect16(DC_BFLOAT16, DC_MAX, 0x7fc1, 0x3f80, 0x7fc1);
  expect16(DC_BFLOAT16, DC_MIN, 0x0000, 0x8000, 0x8000);
  expect16(DC_BFLOAT16, DC_MIN, 0xff80, 0x7f80, 0xff80);
}

/* ---- bool, integers, complex -------------------------------------------- */

static void test_bool_semantics(void **state) {
  (void)state;
  const uint8_t x[8] = {0, 0, 1, 1, 2, 0xff, 0x80, 0};
  const uint8_t y[8] = {0, 1, 0, 1, 0x40, 0, 0x80, 0x10};
  const uint8_t want_or[8] = {0, 1, 1, 1, 1, 1, 1, 1};
  const uint8_t want_and[8] = {0, 0, 0, 1, 1, 0, 1, 0};
  for (int op = 0; op < DC_OP_COUNT; op++) {
    uint8_t a[8];
    memcpy(a, x, 8);
    assert_int_equal(dc_reduce_local(a, y, 8, DC_BOOL, (dc_op)op), DC_OK);
    const uint8_t *w = (op == DC_SUM || op == DC_MAX) ? want_or : want_and;
    assert_memory_equal(a, w, 8);
  }
  /* In place still normalises to 0/1. */
  uint8_t a[3] = {0, 7, 0x80};
  dc_reduce(a, a, 3, DC_BOOL, DC_MIN);
  assert_memory_equal(a, ((uint8_t[]){0, 1, 1}), 3);
}

static void test_integer_wraparound(void **state) {
  (void)state;
  int8_t i8a[1] = {127}, i8b[1] = {1};
  dc_reduce(i8a, i8b, 1, DC_INT8, DC_SUM);
  assert_int_equal(i8a[0], -128);
  uint8_t u8a[1] = {255}, u8b[1] = {1};
  dc_reduce(u8a, u8b, 1, DC_UINT8, DC_SUM);
  assert_int_equal(u8a[0], 0);
  int16_t i16a[1] = {300}, i16b[1] = {300};
  dc_reduce(i16a, i16b, 1, DC_INT16, DC_PROD);
  assert_int_equal(i16a[0], (int16_t)(90000 - 65536));
  uint16_t u16a[1] = {65535}, u16b[1] = {65535};
  dc_reduce(u16a, u16b, 1, DC_UINT16, DC_PROD);
  assert_int_equal(u16a[0], 1);
  int32_t i32a[1] = {INT32_MAX}, i32b[1] = {1};
  dc_reduce(i32a, i32b, 1, DC_INT32, DC_SUM);
  assert_int_equal(i32a[0], INT32_MIN);
  int64_t i64a[1] = {INT64_MIN}, i64b[1] = {-1};
  dc_reduce(i64a, i64b, 1, DC_INT64, DC_PROD);
  assert_true(i64a[0] == INT64_MIN);
  dc_reduce(i64a, i64b, 1, DC_INT64, DC_SUM);
  assert_true(i64a[0] == INT64_MAX);
  uint64_t u64a[1] = {UINT64_MAX}, u64b[1] = {2};
  dc_reduce(u64a, u64b, 1, DC_UINT64, DC_SUM);
  assert_true(u64a[0] == 1);
  /* Signed vs unsigned max/min. */
  int8_t sm[1] = {-1}, sn[1] = {1};
  dc_reduce(sm, sn, 1, DC_INT8, DC_MAX);
  assert_int_equal(sm[0], 1);
  uint8_t um[1] = {0xff}, un[1] = {1};
  dc_reduce(um, un, 1, DC_UINT8, DC_MAX);
  assert_int_equal(um[0], 0xff);
  int64_t lm[1] = {-5}, ln[1] = {INT64_MIN};
  dc_reduce(lm, ln, 1, DC_INT64, DC_MIN);
  assert_true(lm[0] == INT64_MIN);
}

static void test_complex(void **state) {
  (void)state;
  float a[2] = {1, 2}, b[2] = {3, 4}; /* (1+2i)(3+4i) = -5+10i */
  assert_int_equal(dc_reduce_local(a, b, 1, DC_COMPLEX64, DC_PROD), DC_OK);
  assert_true(a[0] == -5.0f && a[1] == 10.0f);
  float c[2] = {1, 2};
  assert_int_equal(dc_reduce_local(c, b, 1, DC_COMPLEX64, DC_SUM), DC_OK);
  assert_true(c[0] == 4.0f && c[1] == 6.0f);
  /* i * i = -1 in place. */
  float d[2] = {0, 1};
  dc_reduce(d, d, 1, DC_COMPLEX64, DC_PROD);
  assert_true(d[0] == -1.0f && d[1] == 0.0f);
  /* max/min are refused. */
  assert_int_equal(dc_reduce_local(a, b, 1, DC_COMPLEX64, DC_MAX),
                   DC_ERR_NOT_SUPPORTED);
  assert_int_equal(dc_reduce_local(a, b, 1, DC_COMPLEX64, DC_MIN),
                   DC_ERR_NOT_SUPPORTED);
  assert_int_equal(dc_reduce_check(DC_COMPLEX64, DC_MAX), DC_ERR_NOT_SUPPORTED);
  assert_int_equal(dc_reduce_check(DC_COMPLEX64, DC_PROD), DC_OK);
}

/* ---- arguments, sizes, names -------------------------------------------- */

static void test_reduce_local_args(void **state) {
  (void)state;
  float a[4] = {0}, b[4] = {0};
  assert_int_equal(dc_reduce_local(a, b, 4, DC_DTYPE_COUNT, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a, b, 4, (dc_dtype)-1, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a, b, 4, DC_FLOAT32, DC_OP_COUNT),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a, b, 4, DC_FLOAT32, (dc_op)-3),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(NULL, b, 4, DC_FLOAT32, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a, NULL, 4, DC_FLOAT32, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(NULL, NULL, 4, DC_COMPLEX64, DC_MAX),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(NULL, NULL, 0, DC_FLOAT32, DC_SUM), DC_OK);
  assert_int_equal(dc_reduce_local(NULL, NULL, 0, DC_COMPLEX64, DC_MAX),
                   DC_ERR_NOT_SUPPORTED);
  /* Partial overlap is refused; exact aliasing is fine. */
  assert_int_equal(dc_reduce_local(a, a + 1, 3, DC_FLOAT32, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a + 1, a, 3, DC_FLOAT32, DC_SUM),
                   DC_ERR_INVALID);
  assert_int_equal(dc_reduce_local(a, a + 2, 2, DC_FLOAT32, DC_SUM), DC_OK);
  assert_int_equal(dc_reduce_local(a, a, 4, DC_FLOAT32, DC_SUM), DC_OK);
  assert_int_equal(dc_reduce_check(DC_DTYPE_COUNT, DC_SUM), DC_ERR_INVALID);
  assert_int_equal(dc_reduce_check(DC_FLOAT32, DC_OP_COUNT), DC_ERR_INVALID);
}

static void test_sizes_and_names(void **state) {
  (void)state;
  static const struct {
    dc_dtype dt;
    size_t size;
    const char *name;
  } t[] = {{DC_BOOL, 1, "bool"},         {DC_INT8, 1, "int8"},
           {DC_INT16, 2, "int16"},       {DC_INT32, 4, "int32"},
           {DC_INT64, 8, "int64"},       {DC_UINT8, 1, "uint8"},
           {DC_UINT16, 2, "uint16"},     {DC_UINT32, 4, "uint32"},
           {DC_UINT64, 8, "uint64"},     {DC_FLOAT16, 2, "float16"},
           {DC_BFLOAT16, 2, "bfloat16"}, {DC_FLOAT32, 4, "float32"},
           {DC_FLOAT64, 8, "float64"},   {DC_COMPLEX64, 8, "complex64"}};
  assert_int_equal(sizeof t / sizeof t[0], DC_DTYPE_COUNT);
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    assert_int_equal(dc_dtype_size(t[i].dt), t[i].size);
    assert_string_equal(dc_dtype_name(t[i].dt), t[i].name);
  }
  assert_int_equal(dc_dtype_size(DC_DTYPE_COUNT), 0);
  assert_int_equal(dc_dtype_size((dc_dtype)-1), 0);
  assert_string_equal(dc_dtype_name(DC_DTYPE_COUNT), "invalid");
  assert_string_equal(dc_dtype_name((dc_dtype)-1), "invalid");
  assert_string_equal(dc_op_name(DC_SUM), "sum");
  assert_string_equal(dc_op_name(DC_MAX), "max");
  assert_string_equal(dc_op_name(DC_MIN), "min");
  assert_string_equal(dc_op_name(DC_PROD), "prod");
  assert_string_equal(dc_op_name(DC_OP_COUNT), "invalid");
  assert_string_equal(dc_op_name((dc_op)-1), "invalid");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes_and_names),
      cmocka_unit_test(test_reduce_local_args),
      cmocka_unit_test(test_half_conversions_exhaustive),
      cmocka_unit_test(test_bf16_conversions),
      cmocka_unit_test(test_half_rounding),
      cmocka_unit_test(test_bf16_rounding),
      cmocka_unit_test(test_max_min_nan_inf_zero),
      cmocka_unit_test(test_bool_semantics),
      cmocka_unit_test(test_integer_wraparound),
      cmocka_unit_test(test_complex),
      cmocka_unit_test(test_all_dtypes_ops),
      cmocka_unit_test(test_portable_lowp_paths),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
