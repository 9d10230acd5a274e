/* dtype and op names and sizes, and the checked public reduction. */
#include <stdint.h>

#include "kernels/reduce.h"
#include "distcomm.h"

/* One table per property, indexed by the enum; the designated initialisers
 * keep them right if the enum is ever reordered. */
static const struct {
  const char *name;
  unsigned char size;
} dtypes[DC_DTYPE_COUNT] = {
    [DC_BOOL] = {"bool", 1},         [DC_INT8] = {"int8", 1},
    [DC_INT16] = {"int16", 2},       [DC_INT32] = {"int32", 4},
    [DC_INT64] = {"int64", 8},       [DC_UINT8] = {"uint8", 1},
    [DC_UINT16] = {"uint16", 2},     [DC_UINT32] = {"uint32", 4},
    [DC_UINT64] = {"uint64", 8},     [DC_FLOAT16] = {"float16", 2},
    [DC_BFLOAT16] = {"bfloat16", 2}, [DC_FLOAT32] = {"float32", 4},
    [DC_FLOAT64] = {"float64", 8},   [DC_COMPLEX64] = {"complex64", 8},
};

static const char *const op_names[DC_OP_COUNT] = {
    [DC_SUM] = "sum", [DC_MAX] = "max", [DC_MIN] = "min", [DC_PROD] = "prod"};

/* The enums may be signed or unsigned; one unsigned compare covers both. */
static int dtype_ok(dc_dtype d) { return (unsigned)d < DC_DTYPE_COUNT; }

size_t dc_dtype_size(dc_dtype dtype) {
  return dtype_ok(dtype) ? dtypes[dtype].size : 0;
}

const char *dc_dtype_name(dc_dtype dtype) {
  return dtype_ok(dtype) ? dtypes[dtype].name : "invalid";
}

const char *dc_op_name(dc_op op) {
  return (unsigned)op < DC_OP_COUNT ? op_names[op] : "invalid";
}

dc_status dc_reduce_local(void *inout, const void *in, size_t count,
                          dc_dtype dtype, dc_op op) {
  /* Bad arguments first, then "valid but not supported". */
  if (!dtype_ok(dtype) || (unsigned)op >= DC_OP_COUNT)
    return DC_ERR_INVALID;
  if (count > 0 && (inout == NULL || in == NULL))
    return DC_ERR_INVALID;
  dc_status st = dc_reduce_check(dtype, op);
  if (st != DC_OK)
    return st;
  /* Partial overlap would read values already overwritten; only the exact
   * in-place case (inout == in) is defined. */
  if (count > 0 && inout != in) {
    uintptr_t a = (uintptr_t)inout, b = (uintptr_t)in;
    size_t bytes = count * dtypes[dtype].size;
    if (count > SIZE_MAX / dtypes[dtype].size)
      return DC_ERR_INVALID;
    if (a < b + bytes && b < a + bytes)
      return DC_ERR_INVALID;
  }
  dc_reduce(inout, in, count, dtype, op);
  return DC_OK;
}
