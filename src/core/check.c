/* The argument checks of core/check.h: one wording for blocking and
 * non-blocking calls alike. */
#include <stdint.h>
#include <stdio.h>

#include "core/check.h"
#include "kernels/reduce.h"

#define WHY(st, ...) (snprintf(why, sizeof(dc_why), __VA_ARGS__), (st))

dc_status dc_check_dtype(dc_dtype dtype, dc_why why) {
  if ((unsigned)dtype >= DC_DTYPE_COUNT)
    return WHY(DC_ERR_INVALID, "dtype %d is not a dc_dtype", dtype);
  return DC_OK;
}

dc_status dc_check_op(dc_dtype dtype, dc_op op, dc_why why) {
  dc_status st = dc_check_dtype(dtype, why);
  if (st != DC_OK)
    return st;
  st = dc_reduce_check(dtype, op);
  if (st == DC_ERR_NOT_SUPPORTED)
    return WHY(st, "%s of %s is not supported", dc_op_name(op),
               dc_dtype_name(dtype));
  if (st != DC_OK)
    return WHY(st, "op %d is not a dc_op", op);
  return DC_OK;
}

dc_status dc_check_buf_why(const void *buf, const char *what, size_t count,
                           dc_dtype dtype, int size, dc_why why) {
  dc_status st = dc_check_dtype(dtype, why);
  if (st != DC_OK)
    return st;
  if (!buf && count > 0)
    return WHY(DC_ERR_INVALID, "%s buffer is NULL with count %zu", what, count);
  size_t bytes;
  if (__builtin_mul_overflow(count, dc_dtype_size(dtype) * (size_t)size,
                             &bytes))
    return WHY(DC_ERR_INVALID, "count %zu overflows size_t", count);
  return DC_OK;
}

dc_status dc_check_peer_why(int peer, const char *what, int self_ok, int rank,
                            int size, dc_why why) {
  if (peer < 0 || peer >= size)
    return WHY(DC_ERR_INVALID, "%s %d is out of range (group size %d)", what,
               peer, size);
  if (!self_ok && peer == rank)
    return WHY(DC_ERR_INVALID, "%s %d is this rank", what, peer);
  return DC_OK;
}
