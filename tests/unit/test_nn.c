/* Unit tests of src/nn: dc_average_gradients and dc_clip_grad_norm_sharded
 * in one process. Two kinds of group:
 *   - the singleton from dc_init (nothing configured): averaging is a no-op;
 *   - a fake group of size 4 built on the internal backend table, whose
 *     all_reduce plays the other three ranks itself. It records every call
 *     (count, dtype, buffer), so the bucketing is checked exactly: how many
 *     all_sums, of what size, in which order, in place or not.
 * The same properties are checked across real processes in
 * tests/examples/bucketing_test.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "kernels/reduce.h"
#include "distcomm.h"

/* ---- the fake group ----------------------------------------------------- */

#define FAKE_SIZE 4
#define MAX_CALLS 64

typedef struct call {
  size_t count;
  dc_dtype dtype;
  const void *buf;
} call;

static call calls[MAX_CALLS];
static int ncalls;
/* Rank k of the fake holds the caller's values + k * offset, so the sum is
 * 4x + 6 * offset and the average x + 1.5 * offset. */
static double offset;

static double get(const void *p, size_t i, dc_dtype d) {
  switch (d) {
  case DC_INT8:
    return ((const int8_t *)p)[i];
  case DC_INT32:
    return ((const int32_t *)p)[i];
  case DC_INT64:
    return (double)((const int64_t *)p)[i];
  case DC_UINT8:
    return ((const uint8_t *)p)[i];
  case DC_FLOAT16:
    return dc_half_to_float(((const uint16_t *)p)[i]);
  case DC_BFLOAT16:
    return dc_bf16_to_float(((const uint16_t *)p)[i]);
  case DC_FLOAT32:
    return ((const float *)p)[i];
  case DC_FLOAT64:
    return ((const double *)p)[i];
  default:
    fail_msg("dtype %s not handled by the fake", dc_dtype_name(d));
  }
  return 0;
}

static void set(void *p, size_t i, dc_dtype d, double v) {
  switch (d) {
  case DC_INT8:
    ((int8_t *)p)[i] = (int8_t)v;
    break;
  case DC_INT32:
    ((int32_t *)p)[i] = (int32_t)v;
    break;
  case DC_INT64:
    ((int64_t *)p)[i] = (int64_t)v;
    break;
  case DC_UINT8:
    ((uint8_t *)p)[i] = (uint8_t)v;
    break;
  case DC_FLOAT16:
    ((uint16_t *)p)[i] = dc_float_to_half((float)v);
    break;
  case DC_BFLOAT16:
    ((uint16_t *)p)[i] = dc_float_to_bf16((float)v);
    break;
  case DC_FLOAT32:
    ((float *)p)[i] = (float)v;
    break;
  case DC_FLOAT64:
    ((double *)p)[i] = v;
    break;
  default:
    fail_msg("dtype %s not handled by the fake", dc_dtype_name(d));
  }
}

static dc_status fake_all_reduce(dc_group *g, const void *send, void *recv,
                                 size_t count, dc_dtype dtype, dc_op op) {
  assert_int_equal(op, DC_SUM);
  assert_true(ncalls < MAX_CALLS);
  calls[ncalls++] = (call){count, dtype, send};
  for (size_t i = 0; i < count; i++) {
    double x = get(send, i, dtype), sum = 0;
    for (int k = 0; k < g->size; k++)
      sum += x + k * offset;
    set(recv, i, dtype, sum);
  }
  return DC_OK;
}

static void fake_destroy(dc_group *g) { (void)g; }

static const dc_backend_ops fake_ops = {
    .name = "fake",
    .all_reduce = fake_all_reduce,
    .destroy = fake_destroy,
};

static dc_group *fake_group(void) {
  dc_group *g = dc_group_new(&fake_ops, NULL, 0, FAKE_SIZE, 42);
  assert_non_null(g);
  ncalls = 0;
  offset = 0;
  return g;
}

static dc_group *singleton(void) {
  unsetenv("MLX_RANK");
  unsetenv("MLX_HOSTFILE");
  dc_group *g = NULL;
  assert_int_equal(dc_init("any", 0, &g), DC_OK);
  assert_int_equal(dc_group_size(g), 1);
  return g;
}

/* ten float32 tensors of ten ones, like MLX's test_average_gradients */
static float ones[10][10];
static dc_tensor ten[10];

static void fill_ones(void) {
  for (int i = 0; i < 10; i++) {
    for (int j = 0; j < 10; j++)
      ones[i][j] = 1.0f;
    ten[i] = (dc_tensor){ones[i], 10, DC_FLOAT32};
  }
}

static void assert_all_ones(void) {
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 10; j++)
      assert_true(ones[i][j] == 1.0f);
}

/* ---- average_gradients: bucketing --------------------------------------- */

static void test_mlx_call_counts(void **state) {
  (void)state;
  dc_group *g = fake_group();
  struct {
    long long size;
    int calls;
    size_t count;
  } cases[] = {{DC_ALL_REDUCE_SIZE_DEFAULT, 1, 100},
               {200, 2, 50},
               {0, 10, 10},
               {-5, 10, 10},
               {40, 10, 10},
               {41, 5, 20}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    fill_ones();
    ncalls = 0;
    unsigned long long before = dc_group_collectives(g);
    assert_int_equal(dc_average_gradients(g, ten, 10, cases[c].size), DC_OK);
    assert_int_equal(ncalls, cases[c].calls);
    assert_int_equal(dc_group_collectives(g) - before, cases[c].calls);
    for (int i = 0; i < ncalls; i++) {
      assert_int_equal(calls[i].count, cases[c].count);
      assert_int_equal(calls[i].dtype, DC_FLOAT32);
    }
    assert_all_ones();
  }
  dc_group_free(g);
}

static void test_values_averaged(void **state) {
  (void)state;
  dc_group *g = fake_group();
  offset = 1; /* ranks hold x, x+1, x+2, x+3: average x + 1.5 */
  float a[3] = {1, 2, -4};
  double b[2] = {0.5, -0.25};
  int32_t c[4] = {1, -5, 7, 0};
  int8_t d[2] = {10, -10};
  uint8_t e[1] = {3};
  uint16_t h[2] = {dc_float_to_half(2.0f), dc_float_to_bf16(2.0f)};
  dc_tensor t[] = {{a, 3, DC_FLOAT32},     {b, 2, DC_FLOAT64},
                   {c, 4, DC_INT32},       {d, 2, DC_INT8},
                   {e, 1, DC_UINT8},       {&h[0], 1, DC_FLOAT16},
                   {&h[1], 1, DC_BFLOAT16}};
  assert_int_equal(dc_average_gradients(g, t, 7, DC_ALL_REDUCE_SIZE_DEFAULT),
                   DC_OK);
  assert_true(a[0] == 2.5f && a[1] == 3.5f && a[2] == -2.5f);
  assert_true(b[0] == 2.0 && b[1] == 1.25);
  /* (4x + 6) / 4 truncated toward zero: 1 -> 10/4 = 2, -5 -> -14/4 = -3 */
  assert_int_equal(c[0], 2);
  assert_int_equal(c[1], -3);
  assert_int_equal(c[2], 8);
  assert_int_equal(c[3], 1);
  assert_int_equal(d[0], 11); /* 46/4 */
  assert_int_equal(d[1], -8); /* -34/4 */
  assert_int_equal(e[0], 4);  /* 18/4 */
  assert_true(dc_half_to_float(h[0]) == 3.5f);
  assert_true(dc_bf16_to_float(h[1]) == 3.5f);
  dc_group_free(g);
}

static void test_mixed_dtypes_one_bucket_each(void **state) {
  (void)state;
  dc_group *g = fake_group();
  float f1[4] = {1, 1, 1, 1}, f2[2] = {2, 2};
  int32_t i1[3] = {5, 5, 5}, i2[1] = {6};
  double d1[2] = {3, 3};
  dc_tensor t[] = {{f1, 4, DC_FLOAT32},
                   {i1, 3, DC_INT32},
                   {d1, 2, DC_FLOAT64},
                   {f2, 2, DC_FLOAT32},
                   {i2, 1, DC_INT32}};
  assert_int_equal(dc_average_gradients(g, t, 5, DC_ALL_REDUCE_SIZE_DEFAULT),
                   DC_OK);
  /* one all_sum per dtype, each packing that dtype's tensors in order */
  assert_int_equal(ncalls, 3);
  int seen_f = 0, seen_i = 0, seen_d = 0;
  for (int k = 0; k < ncalls; k++) {
    size_t want = calls[k].dtype == DC_FLOAT32 ? 6
                  : calls[k].dtype == DC_INT32 ? 4
                                               : 2;
    seen_f += calls[k].dtype == DC_FLOAT32;
    seen_i += calls[k].dtype == DC_INT32;
    seen_d += calls[k].dtype == DC_FLOAT64;
    assert_int_equal(calls[k].count, want);
  }
  assert_true(seen_f == 1 && seen_i == 1 && seen_d == 1);
  assert_true(f1[3] == 1 && f2[0] == 2 && f2[1] == 2);
  assert_true(i1[0] == 5 && i2[0] == 6 && d1[1] == 3);

  /* one by one: five all_sums, in list order */
  ncalls = 0;
  assert_int_equal(dc_average_gradients(g, t, 5, 0), DC_OK);
  assert_int_equal(ncalls, 5);
  for (int k = 0; k < 5; k++) {
    assert_int_equal(calls[k].dtype, t[k].dtype);
    assert_ptr_equal(calls[k].buf, t[k].data);
  }
  dc_group_free(g);
}

static void test_big_tensor_in_place(void **state) {
  (void)state;
  dc_group *g = fake_group();
  static float big[1000];
  float s[5][10];
  for (int i = 0; i < 1000; i++)
    big[i] = 0.5f;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 10; j++)
      s[i][j] = (float)i;
  dc_tensor t[] = {{s[0], 10, DC_FLOAT32}, {s[1], 10, DC_FLOAT32},
                   {s[2], 10, DC_FLOAT32}, {big, 1000, DC_FLOAT32},
                   {s[3], 10, DC_FLOAT32}, {s[4], 10, DC_FLOAT32}};
  assert_int_equal(dc_average_gradients(g, t, 6, 200), DC_OK);
  /* the three small ones before it, then it alone (no copy), then the rest */
  assert_int_equal(ncalls, 3);
  assert_int_equal(calls[0].count, 30);
  assert_int_equal(calls[1].count, 1000);
  assert_ptr_equal(calls[1].buf, big);
  assert_int_equal(calls[2].count, 20);
  assert_true(big[999] == 0.5f && s[4][9] == 4.0f && s[0][0] == 0.0f);
  dc_group_free(g);
}

static void test_single_member_bucket_not_copied(void **state) {
  (void)state;
  dc_group *g = fake_group();
  float a[30], b[10];
  for (int i = 0; i < 30; i++)
    a[i] = 1;
  for (int i = 0; i < 10; i++)
    b[i] = 2;
  dc_tensor t[] = {{a, 30, DC_FLOAT32}, {b, 10, DC_FLOAT32}};
  /* a (120 bytes) alone reaches the 100-byte bucket: in place */
  assert_int_equal(dc_average_gradients(g, t, 2, 100), DC_OK);
  assert_int_equal(ncalls, 2);
  assert_ptr_equal(calls[0].buf, a);
  assert_ptr_equal(calls[1].buf, b); /* a trailing bucket of one */
  assert_true(a[29] == 1 && b[9] == 2);
  dc_group_free(g);
}

static void test_staging_bounded(void **state) {
  (void)state;
  dc_group *g = fake_group();
  enum { N = 40 };
  static float data[N][25];
  dc_tensor t[N];
  for (int i = 0; i < N; i++) {
    size_t count = 1 + (size_t)(i * 7) % 25; /* 4 to 100 bytes */
    t[i] = (dc_tensor){data[i], count, DC_FLOAT32};
  }
  long long limit = 128;
  assert_int_equal(dc_average_gradients(g, t, N, limit), DC_OK);
  size_t total = 0;
  for (int k = 0; k < ncalls; k++) {
    size_t bytes = calls[k].count * 4;
    total += calls[k].count;
    assert_true(bytes < 2 * (size_t)limit);
    if (k < ncalls - 1)
      assert_true(bytes >= (size_t)limit); /* only the last may be short */
  }
  size_t expect = 0;
  for (int i = 0; i < N; i++)
    expect += t[i].count;
  assert_int_equal(total, expect);
  dc_group_free(g);
}

static void test_empty_and_zero_counts(void **state) {
  (void)state;
  dc_group *g = fake_group();
  assert_int_equal(dc_average_gradients(g, NULL, 0, 0), DC_OK);
  assert_int_equal(dc_average_gradients(g, ten, 0, 0), DC_OK);
  float x[2] = {1, 1};
  dc_tensor t[] = {
      {NULL, 0, DC_FLOAT32}, {x, 2, DC_FLOAT32}, {NULL, 0, DC_INT64}};
  assert_int_equal(dc_average_gradients(g, t, 3, 0), DC_OK);
  assert_int_equal(ncalls, 1); /* empty tensors send nothing */
  assert_int_equal(dc_group_collectives(g), 1);
  assert_true(x[0] == 1 && x[1] == 1);
  dc_group_free(g);
}

/* ---- average_gradients: bad arguments ------------------------------------ */

static void test_average_errors(void **state) {
  (void)state;
  assert_int_equal(dc_average_gradients(NULL, ten, 10, 0), DC_ERR_INVALID);
  assert_non_null(strstr(dc_last_error(), "group is NULL"));

  dc_group *g = fake_group();
  assert_int_equal(dc_average_gradients(g, NULL, 3, 0), DC_ERR_INVALID);
  assert_non_null(strstr(dc_group_last_error(g), "average_gradients"));

  fill_ones();
  dc_tensor t[4];
  memcpy(t, ten, sizeof t);
  t[3].data = NULL;
  assert_int_equal(dc_average_gradients(g, t, 4, 0), DC_ERR_INVALID);
  assert_non_null(strstr(dc_group_last_error(g), "tensor 3"));
  assert_int_equal(ncalls, 0); /* checked before anything is sent */

  memcpy(t, ten, sizeof t);
  t[2].dtype = (dc_dtype)99;
  assert_int_equal(dc_average_gradients(g, t, 4, 0), DC_ERR_INVALID);
  assert_non_null(strstr(dc_group_last_error(g), "tensor 2"));
  t[2].dtype = (dc_dtype)-1;
  assert_int_equal(dc_average_gradients(g, t, 4, 0), DC_ERR_INVALID);

  memcpy(t, ten, sizeof t);
  t[1].count = SIZE_MAX / 2;
  assert_int_equal(dc_average_gradients(g, t, 4, 0), DC_ERR_INVALID);
  assert_int_equal(ncalls, 0);

  /* the group is not poisoned by a bad argument */
  assert_int_equal(dc_average_gradients(g, ten, 10, 0), DC_OK);

  /* a poisoned group answers with its first failure at once */
  g->failed = DC_ERR_PEER_LOST;
  ncalls = 0;
  assert_int_equal(dc_average_gradients(g, ten, 10, 0), DC_ERR_PEER_LOST);
  assert_int_equal(ncalls, 0);
  g->failed = DC_OK;
  dc_group_free(g);
}

/* ---- singleton ------------------------------------------------------------
 */

static void test_singleton_average(void **state) {
  (void)state;
  dc_group *g = singleton();
  fill_ones();
  ones[4][4] = 7.0f;
  unsigned long long before = dc_group_collectives(g);
  assert_int_equal(dc_average_gradients(g, ten, 10, 0), DC_OK);
  assert_int_equal(dc_average_gradients(g, ten, 10, 200), DC_OK);
  assert_int_equal(dc_average_gradients(g, NULL, 0, 0), DC_OK);
  assert_int_equal(dc_group_collectives(g), before); /* no collectives */
  assert_true(ones[4][4] == 7.0f && ones[9][9] == 1.0f);
  /* errors are reported on a group of one as well */
  dc_tensor t = {NULL, 3, DC_FLOAT32};
  assert_int_equal(dc_average_gradients(g, &t, 1, 0), DC_ERR_INVALID);
  assert_non_null(strstr(dc_group_last_error(g), "tensor 0"));
  dc_group_free(g);
}

/* ---- clip_grad_norm_sharded -----------------------------------------------
 */

static void test_clip_singleton(void **state) {
  (void)state;
  dc_group *g = singleton();
  float a[2] = {3, 4};
  dc_tensor t = {a, 2, DC_FLOAT32};
  double norm = 0;
  unsigned long long before = dc_group_collectives(g);
  assert_int_equal(dc_clip_grad_norm_sharded(g, &t, 1, 10.0, &norm), DC_OK);
  assert_int_equal(dc_group_collectives(g) - before, 1); /* one all_sum */
  assert_true(norm == 5.0);
  assert_true(a[0] == 3 && a[1] == 4); /* under max_norm: untouched */

  assert_int_equal(dc_clip_grad_norm_sharded(g, &t, 1, 1.0, &norm), DC_OK);
  assert_true(norm == 5.0);
  assert_true(fabsf(a[0] - 0.6f) < 1e-6f && fabsf(a[1] - 0.8f) < 1e-6f);

  /* every floating dtype counts, complex64 as |z|^2 */
  double d[1] = {2};
  uint16_t h[1] = {dc_float_to_half(2)}, bf[1] = {dc_float_to_bf16(2)};
  float z[2] = {1, 1}; /* |1+i|^2 = 2 */
  dc_tensor m[] = {{d, 1, DC_FLOAT64},
                   {h, 1, DC_FLOAT16},
                   {bf, 1, DC_BFLOAT16},
                   {z, 1, DC_COMPLEX64},
                   {NULL, 0, DC_FLOAT32}};
  assert_int_equal(dc_clip_grad_norm_sharded(g, m, 5, 100, &norm), DC_OK);
  assert_true(fabs(norm - sqrt(14.0)) < 1e-12);
  assert_int_equal(dc_clip_grad_norm_sharded(g, m, 5, sqrt(14.0) / 2, NULL),
                   DC_OK);
  assert_true(fabs(d[0] - 1.0) < 1e-6);
  assert_true(fabsf(dc_half_to_float(h[0]) - 1.0f) < 1e-3f);
  assert_true(fabsf(dc_bf16_to_float(bf[0]) - 1.0f) < 1e-2f);
  assert_true(fabsf(z[0] - 0.5f) < 1e-6f && fabsf(z[1] - 0.5f) < 1e-6f);

  /* an empty list has norm 0 and still makes its one all_sum */
  before = dc_group_collectives(g);
  assert_int_equal(dc_clip_grad_norm_sharded(g, NULL, 0, 1, &norm), DC_OK);
  assert_true(norm == 0.0);
  assert_int_equal(dc_group_collectives(g) - before, 1);
  dc_group_free(g);
}

static void test_clip_sharded_fake(void **state) {
  (void)state;
  dc_group *g = fake_group();
  /* four ranks each holding a shard of squared norm 25: global norm 10 */
  float a[2] = {3, 4};
  dc_tensor t = {a, 2, DC_FLOAT32};
  double norm = 0;
  assert_int_equal(dc_clip_grad_norm_sharded(g, &t, 1, 5.0, &norm), DC_OK);
  assert_int_equal(ncalls, 1);
  assert_int_equal(calls[0].dtype, DC_FLOAT64);
  assert_int_equal(calls[0].count, 1);
  assert_true(fabs(norm - 10.0) < 1e-12);
  assert_true(fabsf(a[0] - 1.5f) < 1e-5f && fabsf(a[1] - 2.0f) < 1e-5f);
  dc_group_free(g);
}

static void test_clip_errors(void **state) {
  (void)state;
  assert_int_equal(dc_clip_grad_norm_sharded(NULL, NULL, 0, 1, NULL),
                   DC_ERR_INVALID);
  dc_group *g = fake_group();
  int32_t i[2] = {3, 4};
  float f[2] = {3, 4};
  dc_tensor t[] = {{f, 2, DC_FLOAT32}, {i, 2, DC_INT32}};
  assert_int_equal(dc_clip_grad_norm_sharded(g, t, 2, 1, NULL), DC_ERR_INVALID);
  assert_non_null(strstr(dc_group_last_error(g), "tensor 1"));
  assert_non_null(strstr(dc_group_last_error(g), "clip_grad_norm_sharded"));
  assert_int_equal(dc_clip_grad_norm_sharded(g, t, 1, NAN, NULL),
                   DC_ERR_INVALID);
  assert_int_equal(dc_clip_grad_norm_sharded(g, t, 1, -1, NULL),
                   DC_ERR_INVALID);
  assert_int_equal(dc_clip_grad_norm_sharded(g, NULL, 1, 1, NULL),
                   DC_ERR_INVALID);
  t[0].data = NULL;
  assert_int_equal(dc_clip_grad_norm_sharded(g, t, 1, 1, NULL), DC_ERR_INVALID);
  assert_int_equal(ncalls, 0);
  assert_true(i[0] == 3 && f[0] == 3);
  dc_group_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlx_call_counts),
      cmocka_unit_test(test_values_averaged),
      cmocka_unit_test(test_mixed_dtypes_one_bucket_each),
      cmocka_unit_test(test_big_tensor_in_place),
      cmocka_unit_test(test_single_member_bucket_not_copied),
      cmocka_unit_test(test_staging_bounded),
      cmocka_unit_test(test_empty_and_zero_counts),
      cmocka_unit_test(test_average_errors),
      cmocka_unit_test(test_singleton_average),
      cmocka_unit_test(test_clip_singleton),
      cmocka_unit_test(test_clip_sharded_fake),
      cmocka_unit_test(test_clip_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
