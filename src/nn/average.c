/* dc_average_gradients: MLX's mlx.nn.average_gradients for C callers.
 *
 * Why buckets: every all_sum pays a fixed cost (a frame header per peer, the
 * ring's 2(n-1) steps, a wake-up per step) whatever its size, so averaging 200
 * small gradients one by one pays it 200 times. Packing them into one buffer
 * pays it once ("few large reductions instead of many small ones", seed 002).
 *
 * How the packing works, matching MLX's _group_by_size:
 *   - tensors are taken in list order; each dtype has its own pending bucket
 *     (a bucket must be one dtype for one all_sum);
 *   - a bucket is reduced as soon as it holds at least all_reduce_size bytes;
 *     what is left in each dtype's bucket at the end is reduced last;
 *   - a tensor that alone reaches all_reduce_size is reduced in place, with
 *     no copy (packing would only add two memcpy's of a large buffer), and so
 *     is a bucket that ends up with a single tensor;
 *   - all_reduce_size <= 0 means one all_sum per tensor, in list order.
 * The staging buffer therefore stays below 2 * all_reduce_size: a bucket is
 * under the limit before its last tensor is added, and that tensor is under
 * the limit too. Every rank passes the same list, so every rank makes the
 * same all_sums in the same order; a rank that does not is caught by the
 * all_sum's own mismatch check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "kernels/reduce.h"

static const char op_name[] = "average_gradients";

#define invalid(g, ...) dc_fail_as(g, op_name, DC_ERR_INVALID, __VA_ARGS__)

/* Everything is checked before the first all_sum, so a bad argument never
 * leaves a rank half-way through the list while the others wait. */
static dc_status check_args(dc_group *g, const dc_tensor *t, size_t n) {
  dc_status st = dc_enter(g, op_name);
  if (st != DC_OK)
    return st;
  if (!t && n > 0)
    return invalid(g, "tensors is NULL with n = %zu", n);
  for (size_t i = 0; i < n; i++) {
    if ((unsigned)t[i].dtype >= DC_DTYPE_COUNT)
      return invalid(g, "tensor %zu: dtype %d is not a dc_dtype", i,
                     (int)t[i].dtype);
    if (!t[i].data && t[i].count > 0)
      return invalid(g, "tensor %zu: data is NULL with count %zu", i,
                     t[i].count);
    if (t[i].count > SIZE_MAX / dc_dtype_size(t[i].dtype))
      return invalid(g, "tensor %zu: count %zu overflows size_t", i,
                     t[i].count);
  }
  return DC_OK;
}

#define DIVIDE_INT(T, W)                                                       \
  do {                                                                         \
    T *p = data;                                                               \
    for (size_t i = 0; i < count; i++)                                         \
      p[i] = (T)(p[i] / (W)n); /* C division truncates toward zero */          \
  } while (0)

/* data[i] /= n. Floats multiply by 1/n (float16/bfloat16 through float32),
 * integers divide with truncation. bool holds the logical or of the ranks
 * (the library's sum of bool) and is left as it is: dividing 0/1 by n > 1
 * would only ever give 0. */
static void divide(void *data, size_t count, dc_dtype dtype, int n) {
  switch (dtype) {
  case DC_BOOL:
    break;
  case DC_INT8: DIVIDE_INT(int8_t, long long); break;
  case DC_INT16: DIVIDE_INT(int16_t, long long); break;
  case DC_INT32: DIVIDE_INT(int32_t, long long); break;
  case DC_INT64: DIVIDE_INT(int64_t, long long); break;
  case DC_UINT8: DIVIDE_INT(uint8_t, unsigned long long); break;
  case DC_UINT16: DIVIDE_INT(uint16_t, unsigned long long); break;
  case DC_UINT32: DIVIDE_INT(uint32_t, unsigned long long); break;
  case DC_UINT64: DIVIDE_INT(uint64_t, unsigned long long); break;
  case DC_FLOAT16: {
    uint16_t *p = data;
    float s = 1.0f / (float)n;
    for (size_t i = 0; i < count; i++)
      p[i] = dc_float_to_half(dc_half_to_float(p[i]) * s);
    break;
  }
  case DC_BFLOAT16: {
    uint16_t *p = data;
    float s = 1.0f / (float)n;
    for (size_t i = 0; i < count; i++)
      p[i] = dc_float_to_bf16(dc_bf16_to_float(p[i]) * s);
    break;
  }
  case DC_FLOAT32:
  case DC_COMPLEX64: { /* complex64: both parts are float32 */
    float *p = data;
    float s = 1.0f / (float)n;
    size_t m = dtype == DC_COMPLEX64 ? 2 * count : count;
    for (size_t i = 0; i < m; i++)
      p[i] *= s;
    break;
  }
  case DC_FLOAT64: {
    double *p = data;
    double s = 1.0 / (double)n;
    for (size_t i = 0; i < count; i++)
      p[i] *= s;
    break;
  }
  default:
    break;
  }
}

/* One tensor on its own: all_sum in place, then divide. */
static dc_status average_one(dc_group *g, dc_tensor *t) {
  dc_status st = dc_all_sum(g, t->data, t->data, t->count, t->dtype);
  if (st == DC_OK)
    divide(t->data, t->count, t->dtype, g->size);
  return st;
}

/* A dtype's pending bucket: tensors of that dtype with index in
 * [first, end) and count > 0 (other dtypes in the range are skipped). */
typedef struct bucket {
  size_t first, members, bytes;
} bucket;

typedef struct stage {
  unsigned char *buf;
  size_t cap;
} stage;

static int in_bucket(const dc_tensor *t, dc_dtype dtype) {
  return t->dtype == dtype && t->count > 0;
}

/* Reduce a bucket that ends before index end, then empty it. */
static dc_status flush(dc_group *g, dc_tensor *t, size_t end, dc_dtype dtype,
                       bucket *b, stage *s) {
  dc_status st = DC_OK;
  if (b->members == 1) {
    size_t i = b->first;
    while (!in_bucket(&t[i], dtype))
      i++;
    st = average_one(g, &t[i]);
  } else if (b->members > 1) {
    if (b->bytes > s->cap) {
      unsigned char *p = realloc(s->buf, b->bytes);
      if (!p)
        return invalid(g, "out of memory for a %zu-byte bucket", b->bytes);
      s->buf = p;
      s->cap = b->bytes;
    }
    size_t esize = dc_dtype_size(dtype), off = 0;
    for (size_t i = b->first; i < end; i++)
      if (in_bucket(&t[i], dtype)) {
        memcpy(s->buf + off, t[i].data, t[i].count * esize);
        off += t[i].count * esize;
      }
    size_t count = b->bytes / esize;
    st = dc_all_sum(g, s->buf, s->buf, count, dtype);
    if (st == DC_OK) {
      off = 0;
      for (size_t i = b->first; i < end; i++)
        if (in_bucket(&t[i], dtype)) {
          /* divide each piece right after copying it, while it is in L1 */
          memcpy(t[i].data, s->buf + off, t[i].count * esize);
          divide(t[i].data, t[i].count, dtype, g->size);
          off += t[i].count * esize;
        }
    }
  }
  b->members = 0;
  b->bytes = 0;
  return st;
}

static dc_status average_bucketed(dc_group *g, dc_tensor *t, size_t n,
                                  size_t limit) {
  bucket pending[DC_DTYPE_COUNT] = {{0, 0, 0}};
  stage s = {NULL, 0};
  dc_status st = DC_OK;
  for (size_t i = 0; i < n && st == DC_OK; i++) {
    if (t[i].count == 0)
      continue; /* nothing to send; every rank skips it alike */
    dc_dtype d = t[i].dtype;
    bucket *b = &pending[d];
    size_t bytes = t[i].count * dc_dtype_size(d);
    if (bytes >= limit) {
      /* Too big to share: first send what came before it, keeping order. */
      st = flush(g, t, i, d, b, &s);
      if (st == DC_OK)
        st = average_one(g, &t[i]);
      continue;
    }
    if (b->members == 0)
      b->first = i;
    b->members++;
    b->bytes += bytes;
    if (b->bytes >= limit)
      st = flush(g, t, i + 1, d, b, &s);
  }
  for (int d = 0; d < DC_DTYPE_COUNT && st == DC_OK; d++)
    st = flush(g, t, n, (dc_dtype)d, &pending[d], &s);
  free(s.buf);
  return st;
}

dc_status dc_average_gradients(dc_group *g, dc_tensor *tensors, size_t n,
                               long long all_reduce_size) {
  dc_status st = check_args(g, tensors, n);
  if (st != DC_OK || g->size == 1)
    return st; /* a group of one: the average is the tensor itself */
  /* A limit of 1 byte makes every non-empty tensor "big": one all_sum each,
   * in place, in list order. */
  size_t limit = all_reduce_size <= 0 ? 1 : (size_t)all_reduce_size;
  return average_bucketed(g, tensors, n, limit);
}
