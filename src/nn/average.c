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
  case DC_INT8:
    DIVIDE_INT(int8_t, long long);
    break;
  case DC_INT16:
    DIVIDE_INT(int16_t, long long);
    break;
  case DC_INT32:
    DIVIDE_INT(int32_t, long long);
    break;
  case DC_INT64:
    DIVIDE_INT(int64_t, long long);
    break;
  case DC_UINT8:
    DIVIDE_INT(uint8_t, unsigned long long);
    break;
  case DC_UINT16:
    DIVIDE_INT(uint16_t, unsigned long long);
    break;
  case DC_UINT32:
    DIVIDE_INT(uint32_t, unsigned long long);
    break;
  case DC_UINT64:
    DIVIDE_INT(uint64_t, unsigned long long);
    break;
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

/* The buckets of one call, in the order their all_sums run. A unit of one
 * member is that tensor (index first) reduced in place, with no copy; a
 * larger one is the tensors of its dtype with count > 0 in [first, end),
 * packed at off in the staging buffer. The blocking and the overlapped form
 * both follow this plan, so they make the same all_sums on the same data. */
typedef struct unit {
  size_t first, end, members, bytes, off;
  dc_dtype dtype;
  size_t waiting; /* overlapped form: members not marked ready yet */
  dc_request *req;
} unit;

typedef struct plan {
  unit *u;
  size_t n, staged; /* units; staging bytes in all */
  size_t *of;       /* tensor index -> its unit (SIZE_MAX: count 0) */
} plan;

static int in_bucket(const dc_tensor *t, dc_dtype dtype) {
  return t->dtype == dtype && t->count > 0;
}

/* Close the pending bucket b of dtype d (if any) ending before index end. */
static void emit(plan *p, unit *b, size_t end, dc_dtype d) {
  if (b->members == 0)
    return;
  unit *u = &p->u[p->n++];
  *u = *b;
  u->end = end;
  u->dtype = d;
  if (u->members > 1) {
    u->off = p->staged;
    p->staged += u->bytes;
  }
  b->members = 0;
  b->bytes = 0;
}

static void add(unit *b, size_t i, size_t bytes) {
  if (b->members == 0)
    b->first = i;
  b->members++;
  b->bytes += bytes;
}

/* MLX's _group_by_size as described at the top; n + DC_DTYPE_COUNT units
 * at most (each tensor closes at most one bucket and adds one unit). */
static dc_status make_plan(const dc_tensor *t, size_t n, size_t limit,
                           plan *p) {
  *p = (plan){0};
  p->u = calloc(n + DC_DTYPE_COUNT, sizeof *p->u);
  p->of = calloc(n + 1, sizeof *p->of);
  if (!p->u || !p->of)
    return DC_ERR_NOMEM;
  unit pending[DC_DTYPE_COUNT] = {{0}};
  for (size_t i = 0; i < n; i++) {
    if (t[i].count == 0)
      continue; /* nothing to send; every rank skips it alike */
    dc_dtype d = t[i].dtype;
    size_t bytes = t[i].count * dc_dtype_size(d);
    if (bytes >= limit) {
      /* Too big to share: first send what came before it, keeping order. */
      emit(p, &pending[d], i, d);
      unit one = {0};
      add(&one, i, bytes);
      emit(p, &one, i + 1, d);
      continue;
    }
    add(&pending[d], i, bytes);
    if (pending[d].bytes >= limit)
      emit(p, &pending[d], i + 1, d);
  }
  for (int d = 0; d < DC_DTYPE_COUNT; d++)
    emit(p, &pending[d], n, (dc_dtype)d);
  for (size_t i = 0; i < n; i++)
    p->of[i] = SIZE_MAX;
  for (size_t k = 0; k < p->n; k++)
    for (size_t i = p->u[k].first; i < p->u[k].end; i++)
      if (in_bucket(&t[i], p->u[k].dtype)) {
        p->of[i] = k;
        p->u[k].waiting++;
      }
  return DC_OK;
}

static void free_plan(plan *p) {
  free(p->u);
  free(p->of);
}

/* Where unit u's all_sum works: the tensor itself or its staging slice,
 * packed from the tensors. */
static void *unit_buf(const unit *u, dc_tensor *t, unsigned char *stage) {
  return u->members == 1 ? t[u->first].data : stage + u->off;
}

static size_t unit_count(const unit *u) {
  return u->bytes / dc_dtype_size(u->dtype);
}

static void pack(const unit *u, const dc_tensor *t, unsigned char *stage) {
  if (u->members == 1)
    return;
  size_t esize = dc_dtype_size(u->dtype), off = u->off;
  for (size_t i = u->first; i < u->end; i++)
    if (in_bucket(&t[i], u->dtype)) {
      memcpy(stage + off, t[i].data, t[i].count * esize);
      off += t[i].count * esize;
    }
}

/* After unit u's all_sum: copy the sums back and divide each piece right
 * after copying it, while it is in L1. */
static void unpack(const unit *u, dc_tensor *t, const unsigned char *stage,
                   int size) {
  size_t esize = dc_dtype_size(u->dtype), off = u->off;
  for (size_t i = u->first; i < u->end; i++)
    if (in_bucket(&t[i], u->dtype)) {
      if (u->members > 1)
        memcpy(t[i].data, stage + off, t[i].count * esize);
      divide(t[i].data, t[i].count, u->dtype, size);
      off += t[i].count * esize;
    }
}

static dc_status average_bucketed(dc_group *g, dc_tensor *t, size_t n,
                                  size_t limit) {
  plan p;
  dc_status st = make_plan(t, n, limit, &p);
  unsigned char *stage = st == DC_OK && p.staged ? malloc(p.staged) : NULL;
  if (st != DC_OK || (p.staged && !stage)) {
    free_plan(&p);
    return invalid(g, "out of memory for the buckets of %zu tensors", n);
  }
  for (size_t k = 0; k < p.n && st == DC_OK; k++) {
    unit *u = &p.u[k];
    pack(u, t, stage);
    void *buf = unit_buf(u, t, stage);
    st = dc_all_sum(g, buf, buf, unit_count(u), u->dtype);
    if (st == DC_OK)
      unpack(u, t, stage, g->size);
  }
  free(stage);
  free_plan(&p);
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

/* ---- the overlapped form ----------------------------------------------
 * Same plan; a unit's all_sum is issued as a request once all its members
 * are ready and every unit before it has been issued, so every rank issues
 * the same all_sums in the same order whatever order it marks tensors in.
 * Listing tensors in the order backward produces them (last layer first)
 * lets each bucket start while backward computes the next layers. */
struct dc_grad_average {
  dc_group *g;
  dc_tensor *t;
  size_t n, next; /* tensors; the first unit not issued yet */
  int size;       /* the group's: wait does not read a freed group */
  unsigned char *ready;
  unsigned char *stage;
  plan p;
  dc_status failed; /* the first issue that failed */
};

static void avg_free(dc_grad_average *av) {
  for (size_t k = 0; k < av->next; k++)
    dc_request_free(av->p.u[k].req);
  free_plan(&av->p);
  free(av->stage);
  free(av->ready);
  free(av);
}

dc_status dc_average_gradients_start(dc_group *g, dc_tensor *tensors, size_t n,
                                     long long all_reduce_size,
                                     dc_grad_average **avg) {
  if (avg)
    *avg = NULL;
  dc_status st = check_args(g, tensors, n);
  if (st != DC_OK)
    return st;
  if (!avg)
    return invalid(g, "avg is NULL");
  dc_grad_average *av = calloc(1, sizeof *av);
  size_t limit = all_reduce_size <= 0 ? 1 : (size_t)all_reduce_size;
  if (!av || (st = make_plan(tensors, n, limit, &av->p)) != DC_OK ||
      !(av->ready = calloc(n + 1, 1)) ||
      (av->p.staged && !(av->stage = malloc(av->p.staged)))) {
    if (av)
      avg_free(av);
    return invalid(g, "out of memory for the buckets of %zu tensors", n);
  }
  av->g = g;
  av->size = g->size;
  av->t = tensors;
  av->n = n;
  *avg = av;
  return DC_OK;
}

/* Issue the units that are ready, in plan order. A group of one has
 * nothing to reduce: the units are only counted off. */
static void issue_ready(dc_grad_average *av) {
  while (av->next < av->p.n && av->p.u[av->next].waiting == 0 &&
         av->failed == DC_OK) {
    unit *u = &av->p.u[av->next];
    if (av->size > 1) {
      pack(u, av->t, av->stage);
      void *buf = unit_buf(u, av->t, av->stage);
      av->failed =
          dc_iall_sum(av->g, buf, buf, unit_count(u), u->dtype, &u->req);
    }
    av->next++;
  }
}

dc_status dc_average_gradients_ready(dc_grad_average *av, size_t index) {
  if (!av)
    return dc_init_fail(DC_ERR_INVALID, "%s_ready: avg is NULL", op_name);
  if (index >= av->n)
    return dc_init_fail(DC_ERR_INVALID,
                        "%s_ready: tensor %zu is out of range (n = %zu)",
                        op_name, index, av->n);
  if (av->ready[index])
    return dc_init_fail(DC_ERR_INVALID,
                        "%s_ready: tensor %zu was already marked ready",
                        op_name, index);
  av->ready[index] = 1;
  if (av->p.of[index] != SIZE_MAX)
    av->p.u[av->p.of[index]].waiting--;
  issue_ready(av);
  return av->failed;
}

dc_status dc_average_gradients_wait(dc_grad_average *av) {
  if (!av)
    return dc_init_fail(DC_ERR_INVALID, "%s_wait: avg is NULL", op_name);
  /* Tensors never marked are taken as ready now: every rank still makes
   * every all_sum, so no peer is left waiting. */
  for (size_t i = 0; i < av->n; i++)
    if (!av->ready[i])
      dc_average_gradients_ready(av, i);
  dc_status st = av->failed;
  for (size_t k = 0; k < av->next; k++) {
    unit *u = &av->p.u[k];
    dc_status s = u->req ? dc_wait(u->req) : DC_OK;
    if (s == DC_OK && st == DC_OK && av->size > 1)
      unpack(u, av->t, av->stage, av->size);
    if (st == DC_OK)
      st = s;
  }
  avg_free(av);
  return st;
}
