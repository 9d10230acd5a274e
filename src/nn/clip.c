/* dc_clip_grad_norm_sharded: clip by the global norm of gradients whose
 * pieces live on different ranks (tensor-parallel or FSDP shards), like MLX's
 * clip_grad_norm_sharded / the clipping inside fsdp_apply_gradients.
 *
 * The norm of the whole gradient is sqrt(sum over ranks of each rank's sum
 * of squares), so one all_sum of a single double is all the communication
 * needed. Every rank then holds the same bits of the norm (the library's
 * all_sum gives bit-identical results everywhere) and so applies the same
 * scale. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/group.h"
#include "kernels/reduce.h"

static const char op_name[] = "clip_grad_norm_sharded";

#define invalid(g, ...) dc_fail_as(g, op_name, DC_ERR_INVALID, __VA_ARGS__)

static int is_floating(dc_dtype d) {
  return d == DC_FLOAT16 || d == DC_BFLOAT16 || d == DC_FLOAT32 ||
         d == DC_FLOAT64 || d == DC_COMPLEX64;
}

static dc_status check_args(dc_group *g, const dc_tensor *t, size_t n,
                            double max_norm) {
  dc_status st = dc_enter(g, op_name);
  if (st != DC_OK)
    return st;
  if (!t && n > 0)
    return invalid(g, "tensors is NULL with n = %zu", n);
  if (!(max_norm >= 0)) /* also refuses NaN */
    return invalid(g, "max_norm %g is not >= 0", max_norm);
  for (size_t i = 0; i < n; i++) {
    if (!is_floating(t[i].dtype))
      return invalid(g, "tensor %zu: dtype %s is not a floating type", i,
                     dc_dtype_name(t[i].dtype));
    if (!t[i].data && t[i].count > 0)
      return invalid(g, "tensor %zu: data is NULL with count %zu", i,
                     t[i].count);
  }
  return DC_OK;
}

/* Sum of squares in double: float32 gradients of millions of elements would
 * lose digits in a float accumulator. complex64 adds |z|^2 = re^2 + im^2. */
static double sum_squares(const dc_tensor *t) {
  double s = 0;
  switch (t->dtype) {
  case DC_FLOAT16: {
    const uint16_t *p = t->data;
    for (size_t i = 0; i < t->count; i++) {
      double v = dc_half_to_float(p[i]);
      s += v * v;
    }
    break;
  }
  case DC_BFLOAT16: {
    const uint16_t *p = t->data;
    for (size_t i = 0; i < t->count; i++) {
      double v = dc_bf16_to_float(p[i]);
      s += v * v;
    }
    break;
  }
  case DC_FLOAT32:
  case DC_COMPLEX64: {
    const float *p = t->data;
    size_t m = t->dtype == DC_COMPLEX64 ? 2 * t->count : t->count;
    for (size_t i = 0; i < m; i++)
      s += (double)p[i] * p[i];
    break;
  }
  case DC_FLOAT64: {
    const double *p = t->data;
    for (size_t i = 0; i < t->count; i++)
      s += p[i] * p[i];
    break;
  }
  default:
    break;
  }
  return s;
}

static void scale(dc_tensor *t, double k) {
  float kf = (float)k;
  switch (t->dtype) {
  case DC_FLOAT16: {
    uint16_t *p = t->data;
    for (size_t i = 0; i < t->count; i++)
      p[i] = dc_float_to_half(dc_half_to_float(p[i]) * kf);
    break;
  }
  case DC_BFLOAT16: {
    uint16_t *p = t->data;
    for (size_t i = 0; i < t->count; i++)
      p[i] = dc_float_to_bf16(dc_bf16_to_float(p[i]) * kf);
    break;
  }
  case DC_FLOAT32:
  case DC_COMPLEX64: {
    float *p = t->data;
    size_t m = t->dtype == DC_COMPLEX64 ? 2 * t->count : t->count;
    for (size_t i = 0; i < m; i++)
      p[i] *= kf;
    break;
  }
  case DC_FLOAT64: {
    double *p = t->data;
    for (size_t i = 0; i < t->count; i++)
      p[i] *= k;
    break;
  }
  default:
    break;
  }
}

dc_status dc_clip_grad_norm_sharded(dc_group *g, dc_tensor *tensors, size_t n,
                                    double max_norm, double *total_norm) {
  dc_status st = check_args(g, tensors, n, max_norm);
  if (st != DC_OK)
    return st;
  double local = 0, global = 0;
  for (size_t i = 0; i < n; i++)
    local += sum_squares(&tensors[i]);
  /* Always one all_sum, even for a group of one: every rank makes the same
   * calls whatever its shard holds. */
  st = dc_all_sum(g, &local, &global, 1, DC_FLOAT64);
  if (st != DC_OK)
    return st;
  double norm = sqrt(global);
  double k = max_norm / (norm + 1e-6);
  /* k < 1 is false for a NaN norm: gradients that are already NaN are left
   * as they are rather than all turned to NaN by the scale. */
  if (k < 1)
    for (size_t i = 0; i < n; i++)
      scale(&tensors[i], k);
  if (total_norm)
    *total_norm = norm;
  return DC_OK;
}
