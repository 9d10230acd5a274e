/* Argument checks shared by the blocking calls (core/group.c) and the
 * non-blocking ones (compose/iops.c). Each returns DC_OK, or the status
 * with its reason in why (no op name: each caller adds its own and records
 * it where its kind of call keeps errors). Pure: no group state is read. */
#ifndef DC_CORE_CHECK_H
#define DC_CORE_CHECK_H

#include <stddef.h>

#include "distcomm.h"

typedef char dc_why[160];

/* dtype is a dc_dtype. */
dc_status dc_check_dtype(dc_dtype dtype, dc_why why);

/* dtype is a dc_dtype, and op one that reduces it. */
dc_status dc_check_op(dc_dtype dtype, dc_op op, dc_why why);

/* The two checks below run before every op is sent: their common case is
 * inline, the reasons are found and written out of line (the _why forms,
 * called only when a check fails). */
dc_status dc_check_buf_why(const void *buf, const char *what, size_t count,
                           dc_dtype dtype, int size, dc_why why);
dc_status dc_check_peer_why(int peer, const char *what, int self_ok, int rank,
                            int size, dc_why why);

/* dtype is a dc_dtype, buf ("send"/"recv"/... in what) is there when
 * count > 0, and count elements on each of size ranks fit in size_t. */
static inline dc_status dc_check_buf(const void *buf, const char *what,
                                     size_t count, dc_dtype dtype, int size,
                                     dc_why why) {
  size_t bytes;
  if ((unsigned)dtype < DC_DTYPE_COUNT && (buf || count == 0) &&
      !__builtin_mul_overflow(count, dc_dtype_size(dtype) * (size_t)size,
                              &bytes))
    return DC_OK;
  return dc_check_buf_why(buf, what, count, dtype, size, why);
}

/* peer (a "dst", "src" or "root" in what) is a rank of a group of size;
 * this rank only when self_ok. */
static inline dc_status dc_check_peer(int peer, const char *what, int self_ok,
                                      int rank, int size, dc_why why) {
  if (peer >= 0 && peer < size && (self_ok || peer != rank))
    return DC_OK;
  return dc_check_peer_why(peer, what, self_ok, rank, size, why);
}

#endif
