/* dc_average_gradients and dc_clip_grad_norm_sharded across real processes
 * (run through distcomm-launch with 2 and 4 ranks): how many all_sums a list
 * of tensors costs for a given bucket size (MLX's test_average_gradients),
 * the averaged values with rank-dependent inputs, mixed dtypes, empty lists,
 * NULL with count 0, a tensor bigger than the bucket, bad arguments, and the
 * sharded gradient norm. Ends with "rank R: P passed, F failed". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distcomm.h"

static int passed, failed, rank, size;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "rank %d: %s:%d: FAILED %s: ", rank, __FILE__, __LINE__, \
              #cond);                                                          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

/* The all_sums (collectives) one call of average_gradients makes. */
static unsigned long long average_calls(dc_group *g, dc_tensor *t, size_t n,
                                        long long bucket, dc_status *st) {
  unsigned long long before = dc_group_collectives(g);
  *st = dc_average_gradients(g, t, n, bucket);
  return dc_group_collectives(g) - before;
}

/* MLX's test: ten tensors of ten ones stay ones; 1, 2, 10 all_sums. */
static void test_mlx_counts(dc_group *g) {
  static float v[10][10];
  dc_tensor t[10];
  struct {
    long long bucket;
    unsigned long long calls;
  } cases[] = {{DC_ALL_REDUCE_SIZE_DEFAULT, 1}, {200, 2}, {0, 10}, {-1, 10}};
  for (size_t c = 0; c < 4; c++) {
    for (int i = 0; i < 10; i++) {
      for (int j = 0; j < 10; j++)
        v[i][j] = 1.0f;
      t[i] = (dc_tensor){v[i], 10, DC_FLOAT32};
    }
    dc_status st;
    unsigned long long calls = average_calls(g, t, 10, cases[c].bucket, &st);
    CHECK(st == DC_OK, "%s", dc_group_last_error(g));
    CHECK(calls == cases[c].calls, "bucket %lld: %llu all_sums, want %llu",
          cases[c].bucket, calls, cases[c].calls);
    int ones = 1;
    for (int i = 0; i < 10; i++)
      for (int j = 0; j < 10; j++)
        ones &= v[i][j] == 1.0f;
    CHECK(ones, "bucket %lld: values are not all 1", cases[c].bucket);
  }
}

/* Rank-dependent floats: x = rank + i + j averages to (size-1)/2 + i + j,
 * exactly, whichever way the tensors are packed. */
static void test_float_values(dc_group *g) {
  enum { N = 200, C = 1024 }; /* 200 tensors of 4 KiB */
  float *v = malloc(sizeof(float) * N * C);
  dc_tensor t[N];
  long long buckets[] = {DC_ALL_REDUCE_SIZE_DEFAULT, 64 * 1024, 0};
  unsigned long long want[] = {1, 13, 200}; /* 64 KiB: 16 tensors a bucket */
  for (int b = 0; b < 3; b++) {
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < C; j++)
        v[i * C + j] = (float)(rank + i + j % 7);
      t[i] = (dc_tensor){&v[i * C], C, DC_FLOAT32};
    }
    dc_status st;
    unsigned long long calls = average_calls(g, t, N, buckets[b], &st);
    CHECK(st == DC_OK, "%s", dc_group_last_error(g));
    CHECK(calls == want[b], "bucket %lld: %llu all_sums, want %llu", buckets[b],
          calls, want[b]);
    long bad = 0;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < C; j++)
        bad += v[i * C + j] != (float)((size - 1) / 2.0 + i + j % 7);
    CHECK(bad == 0, "bucket %lld: %ld wrong values", buckets[b], bad);
  }
  free(v);
}

/* Seven dtypes interleaved: one bucket (all_sum) per dtype by default, one
 * per tensor with 0; integers truncate toward zero. */
static void test_mixed_dtypes(dc_group *g) {
  for (int pass = 0; pass < 2; pass++) {
    float f1[3], f2[2];
    double d[2];
    int32_t i1[2];
    int64_t i2[1];
    uint8_t u[1];
    uint16_t h[1], bf[1];
    for (int k = 0; k < 3; k++)
      f1[k] = (float)(rank * 2 + k);
    f2[0] = f2[1] = (float)rank;
    d[0] = rank * 0.5;
    d[1] = -rank;
    i1[0] = rank * 3 - 5; /* negative sums show truncation toward zero */
    i1[1] = rank;
    i2[0] = 1000000000000ll + rank;
    u[0] = (uint8_t)(10 + rank);
    h[0] = (uint16_t)(rank == 0 ? 0x4000 : 0x3c00);  /* 2.0 or 1.0 */
    bf[0] = (uint16_t)(rank == 0 ? 0x4040 : 0x3f80); /* 3.0 or 1.0 */
    dc_tensor t[] = {{f1, 3, DC_FLOAT32},  {i1, 2, DC_INT32},
                     {d, 2, DC_FLOAT64},   {NULL, 0, DC_FLOAT32},
                     {h, 1, DC_FLOAT16},   {f2, 2, DC_FLOAT32},
                     {i2, 1, DC_INT64},    {u, 1, DC_UINT8},
                     {bf, 1, DC_BFLOAT16}, {NULL, 0, DC_INT8}};
    size_t n = sizeof t / sizeof t[0];
    dc_status st;
    unsigned long long calls =
        average_calls(g, t, n, pass ? 0 : DC_ALL_REDUCE_SIZE_DEFAULT, &st);
    CHECK(st == DC_OK, "%s", dc_group_last_error(g));
    CHECK(calls == (pass ? 8u : 7u), "pass %d: %llu all_sums", pass, calls);
    double mean_rank = (size - 1) / 2.0;
    CHECK(f1[2] == (float)(2 * mean_rank + 2), "f1[2] = %g", f1[2]);
    CHECK(f2[1] == (float)mean_rank, "f2[1] = %g", f2[1]);
    CHECK(d[0] == mean_rank * 0.5 && d[1] == -mean_rank, "d = %g %g", d[0],
          d[1]);
    long long s = 0;
    for (int r = 0; r < size; r++)
      s += r * 3 - 5;
    CHECK(i1[0] == (int32_t)(s / size), "i1[0] = %d, want %lld", i1[0],
          s / size);
    CHECK(i1[1] == (int32_t)((size * (size - 1) / 2) / size), "i1[1] = %d",
          i1[1]);
    CHECK(i2[0] == 1000000000000ll + (size * (size - 1) / 2) / size,
          "i2 = %lld", (long long)i2[0]);
    CHECK(u[0] == (uint8_t)((10 * size + size * (size - 1) / 2) / size),
          "u[0] = %d", u[0]);
    /* float16 (2 + (size-1)) / size and bfloat16 (3 + (size-1)) / size */
    float hw = (float)(2 + (size - 1)) / (float)size;
    float bw = (float)(3 + (size - 1)) / (float)size;
    float hv = h[0] == 0x3e00 ? 1.5f : h[0] == 0x3d00 ? 1.25f : -1;
    float bv = bf[0] == 0x4000 ? 2.0f : bf[0] == 0x3fc0 ? 1.5f : -1;
    CHECK(hv == hw, "float16 0x%04x, want %g", h[0], hw);
    CHECK(bv == bw, "bfloat16 0x%04x, want %g", bf[0], bw);
  }
}

static void test_empty_and_null(dc_group *g) {
  dc_status st;
  CHECK(average_calls(g, NULL, 0, 0, &st) == 0 && st == DC_OK, "NULL, 0");
  float x = 1;
  dc_tensor t[] = {{NULL, 0, DC_FLOAT32}, {NULL, 0, DC_INT64}};
  CHECK(average_calls(g, t, 2, DC_ALL_REDUCE_SIZE_DEFAULT, &st) == 0 &&
            st == DC_OK,
        "two empty tensors");
  dc_tensor one = {&x, 1, DC_FLOAT32};
  CHECK(average_calls(g, &one, 0, 0, &st) == 0 && st == DC_OK, "n = 0");
}

/* A 1 MiB tensor among small ones with a 64 KiB bucket: reduced on its own. */
static void test_big_tensor(dc_group *g) {
  enum { BIG = 1 << 18, SMALL = 1024 };
  float *big = malloc(sizeof(float) * BIG), small[3][SMALL];
  for (int i = 0; i < BIG; i++)
    big[i] = (float)(rank * 2);
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < SMALL; i++)
      small[k][i] = (float)(rank + k);
  dc_tensor t[] = {{small[0], SMALL, DC_FLOAT32},
                   {big, BIG, DC_FLOAT32},
                   {small[1], SMALL, DC_FLOAT32},
                   {small[2], SMALL, DC_FLOAT32}};
  dc_status st;
  unsigned long long calls = average_calls(g, t, 4, 64 * 1024, &st);
  CHECK(st == DC_OK, "%s", dc_group_last_error(g));
  CHECK(calls == 3, "%llu all_sums, want 3 (small, big, two small)", calls);
  CHECK(big[BIG - 1] == (float)(size - 1), "big = %g", big[BIG - 1]);
  CHECK(small[2][SMALL - 1] == (float)((size - 1) / 2.0 + 2), "small = %g",
        small[2][SMALL - 1]);
  free(big);
}

/* Bad arguments fail on every rank before anything is sent, and the group
 * still works afterwards. */
static void test_errors(dc_group *g) {
  float x[4] = {1, 1, 1, 1};
  dc_tensor t[] = {{x, 4, DC_FLOAT32}, {NULL, 4, DC_FLOAT32}};
  dc_status st;
  CHECK(average_calls(g, t, 2, 0, &st) == 0 && st == DC_ERR_INVALID,
        "NULL data: %d", st);
  CHECK(strstr(dc_group_last_error(g), "tensor 1") != NULL, "detail '%s'",
        dc_group_last_error(g));
  CHECK(dc_average_gradients(g, NULL, 2, 0) == DC_ERR_INVALID, "NULL list");
  t[1] = (dc_tensor){x, 4, (dc_dtype)77};
  CHECK(dc_average_gradients(g, t, 2, 0) == DC_ERR_INVALID, "bad dtype");
  CHECK(dc_average_gradients(g, t, 1, 0) == DC_OK && x[0] == 1,
        "group unusable after bad arguments: %s", dc_group_last_error(g));
}

/* Rank r holds a shard of four values r + 1: global squared norm
 * 4 * sum (r+1)^2; every rank gets the same norm and the same scale. */
static void test_clip(dc_group *g) {
  float s[4];
  for (int i = 0; i < 4; i++)
    s[i] = (float)(rank + 1);
  double sq = 0;
  for (int r = 0; r < size; r++)
    sq += 4.0 * (r + 1) * (r + 1);
  double want = sqrt(sq), norm = 0;
  dc_tensor t = {s, 4, DC_FLOAT32};
  unsigned long long before = dc_group_collectives(g);
  dc_status st = dc_clip_grad_norm_sharded(g, &t, 1, 1.0, &norm);
  CHECK(st == DC_OK, "%s", dc_group_last_error(g));
  CHECK(dc_group_collectives(g) - before == 1, "one all_sum");
  CHECK(fabs(norm - want) < 1e-9 * want, "norm %.17g, want %.17g", norm, want);
  float k = (float)(1.0 / (want + 1e-6));
  CHECK(fabsf(s[0] - (float)(rank + 1) * k) < 1e-6f, "scaled %g", s[0]);
  /* the clipped shards together have norm 1 */
  double local = 0, global = 0;
  for (int i = 0; i < 4; i++)
    local += (double)s[i] * s[i];
  dc_all_sum(g, &local, &global, 1, DC_FLOAT64);
  CHECK(fabs(sqrt(global) - 1.0) < 1e-5, "clipped norm %g", sqrt(global));
  /* every rank computed bit-identical norms */
  double hi = norm, lo = norm;
  dc_all_max(g, &hi, &hi, 1, DC_FLOAT64);
  dc_all_min(g, &lo, &lo, 1, DC_FLOAT64);
  CHECK(hi == lo, "norms differ between ranks");
  int32_t bad = 1;
  dc_tensor ti = {&bad, 1, DC_INT32};
  CHECK(dc_clip_grad_norm_sharded(g, &ti, 1, 1.0, NULL) == DC_ERR_INVALID,
        "int32 accepted");
}

int main(void) {
  dc_group *g = NULL;
  dc_status st = dc_init("any", 0, &g);
  if (st != DC_OK) {
    fprintf(stderr, "dc_init: %s (%s)\n", dc_strerror(st), dc_last_error());
    return 1;
  }
  rank = dc_group_rank(g);
  size = dc_group_size(g);
  test_mlx_counts(g);
  test_float_values(g);
  test_mixed_dtypes(g);
  test_empty_and_null(g);
  test_big_tensor(g);
  test_errors(g);
  test_clip(g);
  printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
  dc_group_free(g);
  return failed ? 1 : 0;
}
