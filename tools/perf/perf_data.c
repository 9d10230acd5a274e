/* perf_data.c - rank-dependent test patterns and their verification.
 *
 * Every element is a small integer (or a pair for complex64), exact in all
 * 14 dtypes, so the expected result can be computed in double and compared
 * with ==. The patterns keep reductions exact for up to ~40 ranks: sums stay
 * within int8/bfloat16's exact range, products are +-1 or +-2. */
#include <math.h>
#include <string.h>

#include "perf.h"

/* ---- element access for every dtype ------------------------------------ */

/* Only the small integers used here are converted, so no rounding is needed:
 * they fit the 10-bit mantissa as they are. */
static uint16_t half_from_double(double v) {
  float f = (float)v;
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  if ((b & 0x7fffffffu) == 0)
    return sign;
  int e = (int)((b >> 23) & 0xffu) - 127 + 15;
  return (uint16_t)(sign | (uint32_t)e << 10 | (b & 0x7fffffu) >> 13);
}

/* Decodes any half, subnormals and NaN included: poison must read back as
 * something other than the expected value, never crash or alias. */
static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static uint16_t bf16_from_double(double v) {
  float f = (float)v;
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return (uint16_t)(b >> 16); /* exact: small integers need <= 8 bits */
}

static double bf16_to_double(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

#define PUT(T, v) (((T *)buf)[i] = (T)(v))
static void put(dc_dtype t, void *buf, size_t i, double re, double im) {
  switch (t) {
  case DC_BOOL:
    PUT(uint8_t, re != 0);
    break;
  case DC_INT8:
    PUT(int8_t, re);
    break;
  case DC_INT16:
    PUT(int16_t, re);
    break;
  case DC_INT32:
    PUT(int32_t, re);
    break;
  case DC_INT64:
    PUT(int64_t, re);
    break;
  case DC_UINT8:
    PUT(uint8_t, re);
    break;
  case DC_UINT16:
    PUT(uint16_t, re);
    break;
  case DC_UINT32:
    PUT(uint32_t, re);
    break;
  case DC_UINT64:
    PUT(uint64_t, re);
    break;
  case DC_FLOAT16:
    PUT(uint16_t, half_from_double(re));
    break;
  case DC_BFLOAT16:
    PUT(uint16_t, bf16_from_double(re));
    break;
  case DC_FLOAT32:
    PUT(float, re);
    break;
  case DC_FLOAT64:
    PUT(double, re);
    break;
  case DC_COMPLEX64:
    ((float *)buf)[2 * i] = (float)re;
    ((float *)buf)[2 * i + 1] = (float)im;
    break;
  default:
    break;
  }
}
#undef PUT

/* Reads element i; bool reads the raw byte so poison (0xA5) is not 'true'. */
#define GET(T) ((double)((const T *)buf)[i])
static void get(dc_dtype t, const void *buf, size_t i, double *re, double *im) {
  *im = 0;
  switch (t) {
  case DC_BOOL:
    *re = GET(uint8_t);
    break;
  case DC_INT8:
    *re = GET(int8_t);
    break;
  case DC_INT16:
    *re = GET(int16_t);
    break;
  case DC_INT32:
    *re = GET(int32_t);
    break;
  case DC_INT64:
    *re = GET(int64_t);
    break;
  case DC_UINT8:
    *re = GET(uint8_t);
    break;
  case DC_UINT16:
    *re = GET(uint16_t);
    break;
  case DC_UINT32:
    *re = GET(uint32_t);
    break;
  case DC_UINT64:
    *re = GET(uint64_t);
    break;
  case DC_FLOAT16:
    *re = half_to_double(((const uint16_t *)buf)[i]);
    break;
  case DC_BFLOAT16:
    *re = bf16_to_double(((const uint16_t *)buf)[i]);
    break;
  case DC_FLOAT32:
    *re = GET(float);
    break;
  case DC_FLOAT64:
    *re = GET(double);
    break;
  case DC_COMPLEX64:
    *re = ((const float *)buf)[2 * i];
    *im = ((const float *)buf)[2 * i + 1];
    break;
  default:
    *re = NAN;
    break;
  }
}
#undef GET

/* ---- patterns ------------------------------------------------------------ */

static int is_unsigned(dc_dtype t) {
  return t == DC_BOOL || (t >= DC_UINT8 && t <= DC_UINT64);
}

/* One real component of rank r's element i under reduction pat. */
static double pattern(dc_dtype t, dc_op pat, int nranks, int r, size_t i) {
  size_t ur = (size_t)r;
  if (t == DC_BOOL) { /* min/prod are 'and': mostly-true data keeps them
                         interesting */
    int hit = (ur + i) % 3 == 0;
    return (pat == DC_MIN || pat == DC_PROD) ? !hit : hit;
  }
  if (pat == DC_PROD) { /* one rank contributes 2, the rest 1: no overflow */
    double v = i % (size_t)nranks == ur ? 2 : 1;
    return !is_unsigned(t) && (i + 2 * ur) % 5 == 0 ? -v : v;
  }
  double v = (double)((3 * ur + i) % 7);
  return is_unsigned(t) ? v : v - 3;
}

/* The imaginary part is 0 under prod, so complex and element-wise products
 * agree and the expected value does not depend on which one is meant. */
static void value(const perf_ctx *c, dc_op pat, int r, size_t i, double *re,
                  double *im) {
  dc_dtype t = c->o->dtype;
  *re = pattern(t, pat, c->size, r, i);
  *im = t == DC_COMPLEX64 && pat != DC_PROD ? pattern(t, pat, c->size, r, i + 1)
                                            : 0;
}

static double combine(dc_dtype t, dc_op op, double a, double b) {
  switch (op) {
  case DC_SUM:
    return t == DC_BOOL ? (a != 0 || b != 0) : a + b;
  case DC_MAX:
    return a > b ? a : b;
  case DC_MIN:
    return a < b ? a : b;
  case DC_PROD:
    return a * b;
  default:
    return NAN;
  }
}

/* The reduction over all ranks of element i. */
static void reduced(const perf_ctx *c, size_t i, double *re, double *im) {
  dc_op op = c->o->redop;
  value(c, op, 0, i, re, im);
  for (int r = 1; r < c->size; r++) {
    double xr, xi;
    value(c, op, r, i, &xr, &xi);
    *re = combine(c->o->dtype, op, *re, xr);
    *im = combine(c->o->dtype, op, *im, xi);
  }
}

/* The pattern an op's inputs follow: reductions use the redop's, the rest
 * move data unchanged and use the sum one. */
static dc_op pattern_of(const perf_ctx *c, perf_op op) {
  return op == PERF_ALL_REDUCE || op == PERF_REDUCE_SCATTER ||
                 op == PERF_REDUCE || op == PERF_IALL_REDUCE
             ? c->o->redop
             : DC_SUM;
}

static void fill_rank(const perf_ctx *c, dc_op pat, int r, void *buf,
                      size_t n) {
  for (size_t i = 0; i < n; i++) {
    double re, im;
    value(c, pat, r, i, &re, &im);
    put(c->o->dtype, buf, i, re, im);
  }
}

void perf_poison(const perf_ctx *c, perf_op op, const perf_shape *sh) {
  if (op == PERF_BROADCAST && c->rank == c->o->root)
    return; /* rb is the input */
  memset(c->rb, 0xA5, sh->rbytes);
}

void perf_fill(const perf_ctx *c, perf_op op, const perf_shape *sh) {
  size_t esz = dc_dtype_size(c->o->dtype);
  if (op == PERF_BROADCAST) {
    if (c->rank == c->o->root)
      fill_rank(c, DC_SUM, c->rank, c->rb, sh->rbytes / esz);
  } else if (op == PERF_SCATTER) {
    if (c->rank == c->o->root)
      fill_rank(c, DC_SUM, c->rank, c->sb, sh->sbytes / esz);
  } else {
    fill_rank(c, pattern_of(c, op), c->rank, c->sb, sh->sbytes / esz);
  }
  perf_poison(c, op, sh);
}

/* ---- verification -------------------------------------------------------- */

static int differs(const perf_ctx *c, size_t i, double re, double im) {
  double ar, ai;
  get(c->o->dtype, c->rb, i, &ar, &ai);
  return ar != re || ai != im; /* NaN (poison) never compares equal: wrong */
}

/* Expected value of output element i of op on this rank. */
static void expected(const perf_ctx *c, perf_op op, const perf_shape *sh,
                     size_t i, double *re, double *im) {
  switch (op) {
  case PERF_ALL_REDUCE:
  case PERF_IALL_REDUCE:
  case PERF_REDUCE:
    reduced(c, i, re, im);
    break;
  case PERF_GATHER:
    value(c, DC_SUM, (int)(i / sh->count), i % sh->count, re, im);
    break;
  case PERF_SCATTER:
    value(c, DC_SUM, c->o->root, (size_t)c->rank * sh->count + i, re, im);
    break;
  case PERF_ALL_TO_ALL: /* block q of the result: rank q's block for us */
    value(c, DC_SUM, (int)(i / sh->count),
          (size_t)c->rank * sh->count + i % sh->count, re, im);
    break;
  case PERF_REDUCE_SCATTER:
    reduced(c, (size_t)c->rank * sh->count + i, re, im);
    break;
  case PERF_ALL_GATHER:
    value(c, DC_SUM, (int)(i / sh->count), i % sh->count, re, im);
    break;
  case PERF_BROADCAST:
    value(c, DC_SUM, c->o->root, i, re, im);
    break;
  case PERF_SENDRECV:
    value(c, DC_SUM, 1 - c->rank, i, re, im);
    break;
  default:
    *re = *im = NAN;
    break;
  }
}

size_t perf_verify(const perf_ctx *c, perf_op op, const perf_shape *sh) {
  if (op == PERF_SENDRECV && c->rank > 1)
    return 0; /* not in the exchange */
  if ((op == PERF_GATHER || op == PERF_REDUCE) && c->rank != c->o->root)
    return 0; /* only the root gets a result */
  size_t n = sh->rbytes / dc_dtype_size(c->o->dtype), wrong = 0;
  for (size_t i = 0; i < n; i++) {
    double re, im;
    expected(c, op, sh, i, &re, &im);
    wrong += (size_t)differs(c, i, re, im);
  }
  return wrong;
}
