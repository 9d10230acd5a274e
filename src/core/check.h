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

/* dtype is a dc_dtype, buf ("send"/"recv"/... in what) is there when
 * count > 0, and count elements on each of size ranks fit in size_t. */
dc_status dc_check_buf(const void *buf, const char *what, size_t count,
                       dc_dtype dtype, int size, dc_why why);

/* peer (a "dst", "src" or "root" in what) is a rank of a group of size;
 * this rank only when self_ok. */
dc_status dc_check_peer(int peer, const char *what, int self_ok, int rank,
                        int size, dc_why why);

#endif
