/* Reduction kernels: inout[i] = inout[i] op in[i] for the 14 dtypes.
 *
 * Design
 *   - One plain loop per (type, op), written so that GCC auto-vectorises it
 *     at -O3 (no branches in the body, restrict pointers, unaligned-safe
 *     element types). Per dtype, one dispatch function switches on op.
 *   - On x86-64 those dispatch functions are built twice by GCC function
 *     multi-versioning (target_clones): an x86-64-v3 (AVX2) clone and a
 *     baseline (SSE2) clone, chosen once by the loader (ifunc). The library
 *     therefore runs on any x86-64 and uses AVX2 where present.
 *   - float16/bfloat16 elements are widened to float32, reduced and rounded
 *     back (nearest even) in one pass. float16 uses F16C (vcvtph2ps /
 *     vcvtps2ph) when the CPU has it, else a branch-free software conversion
 *     that also vectorises; bfloat16 only needs shifts and an add.
 *   - Every op gives the same value whichever operand comes first: sum/prod
 *     are IEEE-commutative (of two NaNs the first's payload is kept, so
 *     callers fix the order where two ranks compute one element); max/min
 *     are written on the bit patterns (NaN wins, -0 < +0); FMA contraction
 *     is switched off because a*b + c*d fused is not symmetric in its
 *     operands.
 *   - inout == in is handled by copying `in` block-wise to the stack, so the
 *     loops may keep their restrict qualifiers.
 */
#include "kernels/reduce.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DC_X86 1
#endif

/* a*b + c is not to be fused: the complex product must be symmetric and the
 * AVX2 and baseline clones must give the same bits. The build passes
 * -ffp-contract=off for the library (GNU C defaults to fast). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ThreadSanitizer instruments the IFUNC resolvers that target_clones
 * makes, and they run before its runtime starts: a TSan build uses the
 * portable kernels only. */
#if defined(DC_X86) && defined(__has_attribute) && !defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#define DC_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define DC_AVX2_TARGET __attribute__((target("avx2,f16c")))
#define DC_HAVE_AVX2_PATH 1
#endif
#endif
#ifndef DC_CLONES
#define DC_CLONES
#endif

/* Element types that may sit at any address and alias anything: the caller's
 * buffers are plain bytes to us. */
#define DC_LOOSE __attribute__((aligned(1), may_alias))
typedef uint8_t u8_l DC_LOOSE;
typedef uint16_t u16_l DC_LOOSE;
typedef uint32_t u32_l DC_LOOSE;
typedef uint64_t u64_l DC_LOOSE;
typedef int8_t i8_l DC_LOOSE;
typedef int16_t i16_l DC_LOOSE;
typedef int32_t i32_l DC_LOOSE;
typedef int64_t i64_l DC_LOOSE;
typedef float f32_l DC_LOOSE;
typedef double f64_l DC_LOOSE;

/* Bytes per block when copying an aliased operand (inout == in): small
 * enough for the stack and L1, large enough to amortise the calls. */
#define DC_SELF_BLOCK 4096

/* ---- scalar bit helpers ------------------------------------------------ */

static inline uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline float f32_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
static inline uint64_t f64_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline double f64_of(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* max/min on bit patterns, so that the result does not depend on operand
 * order: exactly one of gt, lt, eq, unordered holds. Equal values differ only
 * for +0/-0, where and/or of the bits picks +0 for max and -0 for min. When
 * unordered, the NaN operand(s) are or-ed: one NaN is returned unchanged,
 * two NaNs give a NaN whatever their order. */
#define DC_FMAXMIN(name, T, U, BITS, OF, IS_MAX)                               \
  static inline T name(T x, T y) {                                             \
    U ux = BITS(x), uy = BITS(y);                                              \
    U gt = (U)0 - (U)(x > y), lt = (U)0 - (U)(x < y);                          \
    U eq = (U)0 - (U)(x == y);                                                 \
    U nx = (U)0 - (U)(x != x), ny = (U)0 - (U)(y != y);                        \
    U r = IS_MAX ? ((gt | nx) & ux) | ((lt | ny) & uy) | (eq & ux & uy)        \
                 : ((lt | nx) & ux) | ((gt | ny) & uy) | (eq & (ux | uy));     \
    return OF(r);                                                              \
  }
DC_FMAXMIN(max_f32, float, uint32_t, f32_bits, f32_of, 1)
DC_FMAXMIN(min_f32, float, uint32_t, f32_bits, f32_of, 0)
DC_FMAXMIN(max_f64, double, uint64_t, f64_bits, f64_of, 1)
DC_FMAXMIN(min_f64, double, uint64_t, f64_bits, f64_of, 0)

/* ---- float16 / bfloat16 conversions (portable, branch-free) ----------- */

/* c ? x : y as masks. With ?: GCC sinks the float operations into a branch
 * and then cannot if-convert them back (they might trap), which stops the
 * loops from vectorising. */
static inline uint32_t dc_select(int c, uint32_t x, uint32_t y) {
  uint32_t m = 0u - (uint32_t)(c != 0);
  return (x & m) | (y & ~m);
}

static inline float half_to_float_soft(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  /* Normal: rebias the exponent (15 -> 127). Inf/NaN: all-ones exponent. */
  uint32_t norm = (em << 13) + (112u << 23);
  norm += em >= 0x7c00u ? (112u << 23) : 0u;
  /* Quiet NaNs as F16C does, so both paths give the same bits. */
  norm |= em > 0x7c00u ? 0x00400000u : 0u;
  /* Subnormal (and zero): the value is em * 2^-24, exact in float32. */
  uint32_t sub = f32_bits((float)(int32_t)em * 0x1p-24f);
  return f32_of(sign | dc_select(em < 0x0400u, sub, norm));
}

static inline uint16_t float_to_half_soft(float f) {
  uint32_t u = f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  /* Normal range: drop 13 mantissa bits rounding to nearest even; a carry
   * into the exponent is correct, and past 65504 it reaches 0x7c00 (inf). */
  uint32_t norm = ((a - (112u << 23)) + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  norm = norm > 0x7c00u ? 0x7c00u : norm;
  /* Below 2^-14: adding 0.5 puts the half ulp (2^-24) at float32's last
   * mantissa bit, so the FPU does the nearest-even rounding for us. */
  uint32_t sub = f32_bits(f32_of(a) + 0.5f) - 0x3f000000u;
  uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t r = dc_select(a < 0x38800000u, sub, norm);
  r = dc_select(a > 0x7f800000u, nan, r);
  return (uint16_t)(sign | r);
}

static inline float bf16_to_float_soft(uint16_t b) {
  return f32_of((uint32_t)b << 16);
}

static inline uint16_t float_to_bf16_soft(float f) {
  uint32_t u = f32_bits(f);
  /* Round to nearest even on the upper 16 bits; overflow carries to inf. */
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  /* NaN: keep sign and top payload, force quiet so it stays a NaN. */
  uint32_t nan = (u >> 16) | 0x0040u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

float dc_half_to_float(uint16_t h) { return half_to_float_soft(h); }
uint16_t dc_float_to_half(float f) { return float_to_half_soft(f); }
float dc_bf16_to_float(uint16_t b) { return bf16_to_float_soft(b); }
uint16_t dc_float_to_bf16(float f) { return float_to_bf16_soft(f); }

/* ---- element-wise loops ------------------------------------------------ */

/* a[i] = EXPR(x = a[i], y = b[i]). Inlined into the dispatchers below, so
 * each target clone gets its own vectorised copy. */
#define DC_LOOP(name, T, EXPR)                                                 \
  static inline void name(T *__restrict a, const T *__restrict b, size_t n) {  \
    for (size_t i = 0; i < n; i++) {                                           \
      T x = a[i], y = b[i];                                                    \
      a[i] = (EXPR);                                                           \
    }                                                                          \
  }

/* Integers: sum and prod in unsigned arithmetic (wraps, no UB, same bits
 * for signed); 1u * promotes 8/16-bit operands to unsigned int, not int. */
#define DC_INT_LOOPS(S, U, T)                                                  \
  DC_LOOP(sum_##S, U, (U)(x + y))                                              \
  DC_LOOP(prod_##S, U, (U)(1u * x * y))                                        \
  DC_LOOP(max_##S, T, x > y ? x : y)                                           \
  DC_LOOP(min_##S, T, x < y ? x : y)                                           \
  DC_LOOP(max_u##S, U, x > y ? x : y)                                          \
  DC_LOOP(min_u##S, U, x < y ? x : y)
DC_INT_LOOPS(8, u8_l, i8_l)
DC_INT_LOOPS(16, u16_l, i16_l)
DC_INT_LOOPS(32, u32_l, i32_l)
DC_INT_LOOPS(64, u64_l, i64_l)

/* bool: inputs are any byte, output is 0 or 1. */
DC_LOOP(or_bool, u8_l, (uint8_t)((x | y) != 0))
DC_LOOP(and_bool, u8_l, (uint8_t)((x != 0) & (y != 0)))

DC_LOOP(sum_f32, f32_l, x + y)
DC_LOOP(prod_f32, f32_l, x *y)
DC_LOOP(maxl_f32, f32_l, max_f32(x, y))
DC_LOOP(minl_f32, f32_l, min_f32(x, y))
DC_LOOP(sum_f64, f64_l, x + y)
DC_LOOP(prod_f64, f64_l, x *y)
DC_LOOP(maxl_f64, f64_l, max_f64(x, y))
DC_LOOP(minl_f64, f64_l, min_f64(x, y))

/* complex64 product on interleaved (re, im) pairs; symmetric in a and b
 * because contraction is off and + and * commute. The real part is written
 * ar*br + (-ai)*bi (the same bits as ar*br - ai*bi): with a - in one lane and
 * a + in the other, GCC 12 emits vfmaddsub even under -ffp-contract=off. */
static inline void prod_c64(f32_l *__restrict a, const f32_l *__restrict b,
                            size_t n) {
  for (size_t i = 0; i < n; i++) {
    float ar = a[2 * i], ai = a[2 * i + 1];
    float br = b[2 * i], bi = b[2 * i + 1];
    a[2 * i] = ar * br + (-ai) * bi;
    a[2 * i + 1] = ar * bi + ai * br;
  }
}

/* ---- per-dtype dispatch (the multi-versioned functions) --------------- */

#define DC_INT_DISPATCH(name, S, US)                                           \
  DC_CLONES static void name(void *a, const void *b, size_t n, dc_op op) {     \
    switch (op) {                                                              \
    case DC_SUM:                                                               \
      sum_##S(a, b, n);                                                        \
      break;                                                                   \
    case DC_PROD:                                                              \
      prod_##S(a, b, n);                                                       \
      break;                                                                   \
    case DC_MAX:                                                               \
      max_##US(a, b, n);                                                       \
      break;                                                                   \
    default:                                                                   \
      min_##US(a, b, n);                                                       \
      break;                                                                   \
    }                                                                          \
  }
DC_INT_DISPATCH(reduce_i8, 8, 8)
DC_INT_DISPATCH(reduce_i16, 16, 16)
DC_INT_DISPATCH(reduce_i32, 32, 32)
DC_INT_DISPATCH(reduce_i64, 64, 64)
DC_INT_DISPATCH(reduce_u8, 8, u8)
DC_INT_DISPATCH(reduce_u16, 16, u16)
DC_INT_DISPATCH(reduce_u32, 32, u32)
DC_INT_DISPATCH(reduce_u64, 64, u64)

DC_CLONES static void reduce_bool(void *a, const void *b, size_t n, dc_op op) {
  if (op == DC_SUM || op == DC_MAX)
    or_bool(a, b, n);
  else
    and_bool(a, b, n);
}

DC_CLONES static void reduce_f32(void *a, const void *b, size_t n, dc_op op) {
  switch (op) {
  case DC_SUM:
    sum_f32(a, b, n);
    break;
  case DC_PROD:
    prod_f32(a, b, n);
    break;
  case DC_MAX:
    maxl_f32(a, b, n);
    break;
  default:
    minl_f32(a, b, n);
    break;
  }
}

DC_CLONES static void reduce_f64(void *a, const void *b, size_t n, dc_op op) {
  switch (op) {
  case DC_SUM:
    sum_f64(a, b, n);
    break;
  case DC_PROD:
    prod_f64(a, b, n);
    break;
  case DC_MAX:
    maxl_f64(a, b, n);
    break;
  default:
    minl_f64(a, b, n);
    break;
  }
}

/* complex64: sum is a float32 sum over twice the count. */
DC_CLONES static void reduce_c64(void *a, const void *b, size_t n, dc_op op) {
  if (op == DC_PROD)
    prod_c64(a, b, n);
  else
    sum_f32(a, b, 2 * n);
}

/* ---- float16 / bfloat16: widen, reduce in float32, round back --------- */

/* One pass, no temporaries: a[i] = narrow(widen(a[i]) op widen(b[i])). */
#define DC_LOWP_LOOPS(P, WIDEN, NARROW)                                        \
  DC_LOOP(sum_##P, u16_l, NARROW(WIDEN(x) + WIDEN(y)))                         \
  DC_LOOP(prod_##P, u16_l, NARROW(WIDEN(x) * WIDEN(y)))                        \
  DC_LOOP(max_##P, u16_l, NARROW(max_f32(WIDEN(x), WIDEN(y))))                 \
  DC_LOOP(min_##P, u16_l, NARROW(min_f32(WIDEN(x), WIDEN(y))))                 \
  static inline void reduce_fused_##P(void *a, const void *b, size_t n,        \
                                      dc_op op) {                              \
    switch (op) {                                                              \
    case DC_SUM:                                                               \
      sum_##P(a, b, n);                                                        \
      break;                                                                   \
    case DC_PROD:                                                              \
      prod_##P(a, b, n);                                                       \
      break;                                                                   \
    case DC_MAX:                                                               \
      max_##P(a, b, n);                                                        \
      break;                                                                   \
    default:                                                                   \
      min_##P(a, b, n);                                                        \
      break;                                                                   \
    }                                                                          \
  }
DC_LOWP_LOOPS(bf16, bf16_to_float_soft, float_to_bf16_soft)
DC_LOWP_LOOPS(hsoft, half_to_float_soft, float_to_half_soft)

/* Portable paths: all CPUs without AVX2+F16C, and every non-x86 CPU. */
DC_CLONES static void reduce_bf16_soft(void *a, const void *b, size_t n,
                                       dc_op op) {
  reduce_fused_bf16(a, b, n, op);
}

DC_CLONES static void reduce_half_soft(void *a, const void *b, size_t n,
                                       dc_op op) {
  reduce_fused_hsoft(a, b, n, op);
}

#ifdef DC_HAVE_AVX2_PATH
/* AVX2 + F16C: 8 or 16 elements per step, widened, reduced and narrowed in
 * registers. Hand-written because GCC 12 does not vectorise _Float16
 * conversions and its bfloat16 code is about twice as long as this.
 * max/min repeat max_f32/min_f32 on vectors (same bits, see DC_FMAXMIN). */
DC_AVX2_TARGET static inline __m256 v8_maxmin(__m256 x, __m256 y, int is_max) {
  __m256 gt = _mm256_cmp_ps(x, y, _CMP_GT_OQ);
  __m256 lt = _mm256_cmp_ps(x, y, _CMP_LT_OQ);
  __m256 eq = _mm256_cmp_ps(x, y, _CMP_EQ_OQ);
  __m256 nx = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  __m256 ny = _mm256_cmp_ps(y, y, _CMP_UNORD_Q);
  __m256 tie = is_max ? _mm256_and_ps(x, y) : _mm256_or_ps(x, y);
  __m256 rx = _mm256_and_ps(_mm256_or_ps(is_max ? gt : lt, nx), x);
  __m256 ry = _mm256_and_ps(_mm256_or_ps(is_max ? lt : gt, ny), y);
  return _mm256_or_ps(_mm256_or_ps(rx, ry), _mm256_and_ps(eq, tie));
}

DC_AVX2_TARGET static inline __m256 v8_op(__m256 x, __m256 y, dc_op op) {
  switch (op) {
  case DC_SUM:
    return _mm256_add_ps(x, y);
  case DC_PROD:
    return _mm256_mul_ps(x, y);
  case DC_MAX:
    return v8_maxmin(x, y, 1);
  default:
    return v8_maxmin(x, y, 0);
  }
}

/* float16, 8 elements from a and b to out. vcvtps2ph immediate 0: round
 * to nearest even whatever MXCSR says. */
DC_AVX2_TARGET __attribute__((always_inline)) static inline void
half_step8(const void *a, const void *b, void *out, dc_op op) {
  __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(a));
  __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(b));
  _mm_storeu_si128(out, _mm256_cvtps_ph(v8_op(x, y, op), 0));
}

/* float32 lanes -> bfloat16 in the low half of each 32-bit lane, the same
 * bits as float_to_bf16_soft. */
DC_AVX2_TARGET static inline __m256i bf16_round(__m256 f) {
  __m256i u = _mm256_castps_si256(f);
  __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
  __m256i r = _mm256_add_epi32(_mm256_add_epi32(u, half), lsb);
  __m256i nan = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_srli_epi32(_mm256_blendv_epi8(r, nan, isnan), 16);
}

/* bfloat16, 16 elements. Interleaving with zeros is the widening (bf16 is
 * the top half of a float32); it permutes the elements within each 128-bit
 * lane and packus undoes exactly that permutation. */
DC_AVX2_TARGET __attribute__((always_inline)) static inline void
bf16_step16(const void *a, const void *b, void *out, dc_op op) {
  __m256i z = _mm256_setzero_si256();
  __m256i va = _mm256_loadu_si256(a), vb = _mm256_loadu_si256(b);
  __m256 xl = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, va));
  __m256 xh = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, va));
  __m256 yl = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, vb));
  __m256 yh = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, vb));
  __m256i rl = bf16_round(v8_op(xl, yl, op));
  __m256i rh = bf16_round(v8_op(xh, yh, op));
  _mm256_storeu_si256(out, _mm256_packus_epi32(rl, rh));
}

/* a[0..n) = a op b, W elements per STEP. Always inlined with a constant op,
 * so each copy has a straight-line body. The tail goes through zero-padded
 * copies. */
#define DC_V_LOOP(name, W, STEP)                                               \
  DC_AVX2_TARGET __attribute__((always_inline)) static inline void name(       \
      u16_l *a, const u16_l *b, size_t n, dc_op op) {                          \
    size_t i = 0;                                                              \
    for (; i + (W) <= n; i += (W))                                             \
      STEP((const void *)(a + i), (const void *)(b + i), (void *)(a + i), op); \
    if (i < n) {                                                               \
      uint16_t ta[W] = {0}, tb[W] = {0};                                       \
      size_t bytes = (n - i) * sizeof ta[0];                                   \
      memcpy(ta, (const void *)(a + i), bytes);                                \
      memcpy(tb, (const void *)(b + i), bytes);                                \
      STEP(ta, tb, ta, op);                                                    \
      memcpy((void *)(a + i), ta, bytes);                                      \
    }                                                                          \
  }
DC_V_LOOP(half_loop, 8, half_step8)
DC_V_LOOP(bf16_loop, 16, bf16_step16)

#define DC_V_DISPATCH(name, LOOP)                                              \
  DC_AVX2_TARGET static void name(void *a, const void *b, size_t n,            \
                                  dc_op op) {                                  \
    switch (op) {                                                              \
    case DC_SUM:                                                               \
      LOOP(a, b, n, DC_SUM);                                                   \
      break;                                                                   \
    case DC_PROD:                                                              \
      LOOP(a, b, n, DC_PROD);                                                  \
      break;                                                                   \
    case DC_MAX:                                                               \
      LOOP(a, b, n, DC_MAX);                                                   \
      break;                                                                   \
    default:                                                                   \
      LOOP(a, b, n, DC_MIN);                                                   \
      break;                                                                   \
    }                                                                          \
  }
DC_V_DISPATCH(reduce_half_avx2, half_loop)
DC_V_DISPATCH(reduce_bf16_avx2, bf16_loop)

static int cpu_has_avx2_f16c(void) {
  /* Idempotent; needed only if we run before libgcc's constructor. */
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#endif

/* Test hook (not in reduce.h): nonzero makes float16/bfloat16 take the
 * portable paths so that unit tests cover them on AVX2 machines. Returns the
 * previous value. Not for concurrent use. */
static int dc_force_portable;
int dc_reduce_force_portable(int on) {
  int old = dc_force_portable;
  dc_force_portable = on;
  return old;
}

#ifdef DC_HAVE_AVX2_PATH
static int use_avx2_path(void) {
  return !dc_force_portable && cpu_has_avx2_f16c();
}
#endif

static void reduce_half(void *a, const void *b, size_t n, dc_op op) {
#ifdef DC_HAVE_AVX2_PATH
  if (use_avx2_path()) {
    reduce_half_avx2(a, b, n, op);
    return;
  }
#endif
  reduce_half_soft(a, b, n, op);
}

static void reduce_bf16(void *a, const void *b, size_t n, dc_op op) {
#ifdef DC_HAVE_AVX2_PATH
  if (use_avx2_path()) {
    reduce_bf16_avx2(a, b, n, op);
    return;
  }
#endif
  reduce_bf16_soft(a, b, n, op);
}

/* ---- public entry points ----------------------------------------------- */

typedef void (*dc_kernel)(void *a, const void *b, size_t n, dc_op op);

static const dc_kernel kernels[DC_DTYPE_COUNT] = {
    [DC_BOOL] = reduce_bool,     [DC_INT8] = reduce_i8,
    [DC_INT16] = reduce_i16,     [DC_INT32] = reduce_i32,
    [DC_INT64] = reduce_i64,     [DC_UINT8] = reduce_u8,
    [DC_UINT16] = reduce_u16,    [DC_UINT32] = reduce_u32,
    [DC_UINT64] = reduce_u64,    [DC_FLOAT16] = reduce_half,
    [DC_BFLOAT16] = reduce_bf16, [DC_FLOAT32] = reduce_f32,
    [DC_FLOAT64] = reduce_f64,   [DC_COMPLEX64] = reduce_c64,
};

static const unsigned char elem_size[DC_DTYPE_COUNT] = {
    [DC_BOOL] = 1,    [DC_INT8] = 1,      [DC_INT16] = 2,    [DC_INT32] = 4,
    [DC_INT64] = 8,   [DC_UINT8] = 1,     [DC_UINT16] = 2,   [DC_UINT32] = 4,
    [DC_UINT64] = 8,  [DC_FLOAT16] = 2,   [DC_BFLOAT16] = 2, [DC_FLOAT32] = 4,
    [DC_FLOAT64] = 8, [DC_COMPLEX64] = 8,
};

dc_status dc_reduce_check(dc_dtype dtype, dc_op op) {
  if ((unsigned)dtype >= DC_DTYPE_COUNT || (unsigned)op >= DC_OP_COUNT)
    return DC_ERR_INVALID;
  if (dtype == DC_COMPLEX64 && (op == DC_MAX || op == DC_MIN))
    return DC_ERR_NOT_SUPPORTED;
  return DC_OK;
}

/* inout == in: the kernels take restrict pointers, so feed them a copy of
 * `in` one block at a time. */
static void reduce_self(unsigned char *a, size_t count, dc_dtype dtype,
                        dc_op op) {
  _Alignas(64) unsigned char tmp[DC_SELF_BLOCK];
  size_t esz = elem_size[dtype], per = sizeof tmp / esz;
  for (size_t i = 0; i < count; i += per) {
    size_t m = count - i < per ? count - i : per;
    memcpy(tmp, a + i * esz, m * esz);
    kernels[dtype](a + i * esz, tmp, m, op);
  }
}

void dc_reduce(void *inout, const void *in, size_t count, dc_dtype dtype,
               dc_op op) {
  if (count == 0)
    return;
  if (inout == in)
    reduce_self(inout, count, dtype, op);
  else
    kernels[dtype](inout, in, count, op);
}
