/*
 * distcomm.h - collective communication for machine learning on CPUs and TCP.
 *
 * A C re-creation of the distributed layer of Apple's MLX (mx.distributed):
 * N processes ("ranks"), on one machine or many, sum, gather and exchange
 * arrays. Names follow MLX where MLX has one (all_sum, sum_scatter, split,
 * MLX_RANK, MLX_HOSTFILE).
 *
 * Ownership
 *   - dc_init() returns a reference to the world group. Calling it again
 *     returns the same group with one more reference; dc_group_free() drops a
 *     reference and tears the group down (closing its connections) when the
 *     last one goes.
 *   - dc_group_split() returns a new group owned by the caller; free it with
 *     dc_group_free() before or after its parent, in any order.
 *   - Buffers always belong to the caller; a blocking call never keeps a
 *     pointer to one after it returns, a non-blocking one (dc_i*) until its
 *     request completes.
 *
 * Threading
 *   - A group is used by one thread at a time. Different groups (e.g. the
 *     results of a split) may be used concurrently from different threads.
 *   - dc_init() and dc_group_free() of the world group must not race.
 *
 * Errors
 *   - Every call returns a dc_status: DC_OK (0) or a negative error.
 *     dc_strerror() gives a fixed text. The detail (a sentence naming the op
 *     and, for the wire, the peer rank and its address; for a bad argument,
 *     the argument) is in exactly one place, by this rule:
 *       1. dc_last_error() (this thread's): dc_init(), and every call that
 *          has no group or request to hold it: a NULL group, request or
 *          output pointer; a non-blocking call (dc_i*) that returns an error
 *          (*req NULL: a bad argument, checked at the call, or the status of
 *          a poisoned group, whose detail is copied here); a training
 *          helper's avg handle misused (NULL, index out of range, twice).
 *       2. dc_group_last_error(group): a blocking call on a group that
 *          fails, arguments included, and a training helper that fails.
 *       3. dc_request_error(req): a request that was started and failed.
 *     Argument errors (DC_ERR_INVALID, and DC_ERR_NOT_SUPPORTED for an op
 *     the dtype lacks) poison nothing. After a communication failure the
 *     group is poisoned: every later collective returns the first error at
 *     once, with the same status and detail. Free a poisoned group and
 *     stop. Using a group after dc_group_free() is a use-after-free the
 *     library cannot detect.
 *     DC_ERR_ABORTED comes in a peer's abort frame that carries no status
 *     of its own.
 *   - Every wait is bounded: when no byte moves for the group's timeout
 *     (default 300 s, DISTCOMM_TIMEOUT in seconds, dc_group_set_timeout()),
 *     the call fails with DC_ERR_TIMEOUT naming the peer it waited for.
 *   - The library never calls exit()/abort() and never prints, unless
 *     MLX_RING_VERBOSE=1 (or DISTCOMM_VERBOSE=1) asks it to log to stderr.
 *
 * Collectives below are blocking (non-blocking forms, dc_i*, further down)
 * and every rank of the group must call them in the
 * same order with the same count, dtype, op and root. A rank that disagrees is
 * detected (DC_ERR_MISMATCH) instead of corrupting memory. In place is allowed
 * (send == recv). Counts are size_t: messages over 2 GiB work.
 */
#ifndef DISTCOMM_H
#define DISTCOMM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DISTCOMM_VERSION_MAJOR 0
#define DISTCOMM_VERSION_MINOR 1
#define DISTCOMM_VERSION_PATCH 0
#define DISTCOMM_VERSION_STRING "0.1.0"

/* DC_API marks the public functions: libdistcomm.so is built with
 * -fvisibility=hidden and exports these and nothing else. */
#if defined(__GNUC__) || defined(__clang__)
#define DC_API __attribute__((visibility("default")))
#else
#define DC_API
#endif

/* The run-time version, e.g. "0.1.0"; compare with DISTCOMM_VERSION_STRING. */
DC_API const char *dc_version(void);

/* ---- status codes ------------------------------------------------------ */

/* X(name, value, text): one list makes the enum, the names and the texts. */
#define DC_STATUS_MAP(X)                                                       \
  X(OK, 0, "success")                                                          \
  X(ERR_INVALID, -1, "invalid argument")                                       \
  X(ERR_NOMEM, -2, "out of memory")                                            \
  X(ERR_SYSTEM, -3, "system error")                                            \
  X(ERR_TIMEOUT, -4, "timed out waiting for a peer")                           \
  X(ERR_PEER_LOST, -5, "peer lost (exited or closed the connection)")          \
  X(ERR_MISMATCH, -6, "ranks disagree on op, count, dtype or root")            \
  X(ERR_NOT_SUPPORTED, -7, "not supported")                                    \
  X(ERR_UNAVAILABLE, -8, "backend unavailable (not built or not configured)")  \
  X(ERR_CONFIG, -9, "bad configuration (hostfile or environment)")             \
  X(ERR_AUTH, -10, "authentication failed")                                    \
  X(ERR_ABORTED, -11, "group aborted by an earlier failure")                   \
  X(ERR_INTERRUPTED, -12, "interrupted by the caller")

typedef enum dc_status {
#define DC_STATUS_ENUM_(name, value, text) DC_##name = value,
  DC_STATUS_MAP(DC_STATUS_ENUM_)
#undef DC_STATUS_ENUM_
} dc_status;

/* Fixed text for a status; never NULL ("unknown status" for other values). */
DC_API const char *dc_strerror(dc_status status);
/* The enumerator's name without prefix, e.g. "ERR_PEER_LOST". */
DC_API const char *dc_status_name(dc_status status);

/* ---- data types and reductions ---------------------------------------- */

typedef enum dc_dtype {
  DC_BOOL, /* 1 byte, 0 or 1 */
  DC_INT8,
  DC_INT16,
  DC_INT32,
  DC_INT64,
  DC_UINT8,
  DC_UINT16,
  DC_UINT32,
  DC_UINT64,
  DC_FLOAT16,  /* IEEE binary16, reduced in float32 arithmetic */
  DC_BFLOAT16, /* bfloat16, reduced in float32 arithmetic */
  DC_FLOAT32,
  DC_FLOAT64,
  DC_COMPLEX64, /* two float32: real, imaginary */
  DC_DTYPE_COUNT
} dc_dtype;

typedef enum dc_op {
  DC_SUM,  /* bool: logical or */
  DC_MAX,  /* bool: or;  NaN wins; complex64: not supported */
  DC_MIN,  /* bool: and; NaN wins; complex64: not supported */
  DC_PROD, /* bool: and */
  DC_OP_COUNT
} dc_op;

/* Bytes per element; 0 for an invalid dtype. */
DC_API size_t dc_dtype_size(dc_dtype dtype);
/* "float32", "bfloat16", ...; "invalid" for an invalid dtype. */
DC_API const char *dc_dtype_name(dc_dtype dtype);
/* "sum", "max", "min", "prod"; "invalid" otherwise. */
DC_API const char *dc_op_name(dc_op op);

/* inout[i] = inout[i] op in[i] for i < count. Thread-safe, vectorised.
 * DC_ERR_NOT_SUPPORTED for max/min of complex64, DC_ERR_INVALID for a bad
 * dtype/op or a NULL buffer with count > 0. */
DC_API dc_status dc_reduce_local(void *inout, const void *in, size_t count,
                                 dc_dtype dtype, dc_op op);

/* ---- groups ------------------------------------------------------------ */

typedef struct dc_group dc_group;

/* Initialise the world group.
 *   backend: "any" (try in order: the mesh when MLX_IBV_DEVICES is set,
 *            the ring from a hostfile, the ring through a coordinator,
 *            MPI), "mesh" (or MLX's "jaccl"; "jaccl-ring" connects ring
 *            neighbours only), "ring" (either ring), "mpi", or NULL
 *            (= "any").
 *   strict:  when nothing is configured, 0 gives a singleton group (rank 0,
 *            size 1, every collective an identity copy); 1 fails with
 *            DC_ERR_UNAVAILABLE and *group = NULL. The detail, which names
 *            the missing variables, is in dc_last_error().
 * Configuration (MLX's names where MLX has them): MLX_RANK + MLX_HOSTFILE,
 * or a coordinator (MLX_JACCL_COORDINATOR, DISTCOMM_COORDINATOR or
 * MASTER_ADDR/MASTER_PORT) with a rank and a world size; for the mesh,
 * MLX_IBV_DEVICES + a coordinator + MLX_RANK; MLX_RING_VERBOSE;
 * DISTCOMM_TIMEOUT (seconds) sets the default timeout. docs/configuration.md
 * lists every variable. Repeated calls return the same world group (one more
 * reference). */
DC_API dc_status dc_init(const char *backend, int strict, dc_group **group);

/* Detail of the last failure in this thread that had no group or request
 * to hold it: dc_init(), a NULL argument, a refused dc_i* call (rule 1 under
 * "Errors" at the top); "" when none. */
DC_API const char *dc_last_error(void);

DC_API int dc_group_rank(const dc_group *group);
DC_API int dc_group_size(const dc_group *group);
/* "ring", "singleton", ... */
DC_API const char *dc_group_backend(const dc_group *group);

/* Detail of the last failure on this group, e.g.
 * "all_sum: rank 2 (10.0.0.3:5001) closed the connection after 12.5 MiB of
 * 64 MiB"; "" when none. Valid until the next call on the group. */
DC_API const char *dc_group_last_error(const dc_group *group);

/* Per-group timeout in seconds (> 0): how long a wait may see no progress. */
DC_API dc_status dc_group_set_timeout(dc_group *group, double seconds);

/* A function the library calls while a collective waits (at least every
 * 100 ms): returning non-zero abandons the wait with DC_ERR_INTERRUPTED and
 * poisons the group (its streams are out of step). Used by the Python
 * module so that Ctrl-C interrupts a long wait. fn NULL removes it. */
typedef int (*dc_interrupt_fn)(void *arg);
DC_API dc_status dc_group_set_interrupt(dc_group *group, dc_interrupt_fn fn,
                                        void *arg);

/* Split into subgroups: ranks with the same color form a group, ordered by
 * key (ties, and key < 0, keep the parent's order). A collective over the
 * parent: every rank must call it. color < 0 (DC_UNDEFINED) takes no part:
 * *out is NULL. The new group has its own connections, so subgroups run
 * collectives side by side. */
#define DC_UNDEFINED (-1)
DC_API dc_status dc_group_split(dc_group *group, int color, int key,
                                dc_group **out);

/* Survive a lost rank (docs/reliability.md): every rank still alive calls
 * it on the group it shared with the lost one, poisoned by the loss or
 * healthy (a healthy group is poisoned first, so that peers blocked in it
 * wake). The survivors agree on who is left, bounded by the group's
 * timeout, also when another rank is lost meanwhile, and *survivors is a
 * new group of them in the old order: new rank = position among the
 * survivors. The caller owns both groups and frees both with
 * dc_group_free(); the old one stays poisoned. On failure *survivors is
 * NULL and the detail is in dc_last_error() (the old group keeps its first
 * failure's): DC_ERR_ABORTED when the others left this rank out (it was
 * silent past the timeout), DC_ERR_PEER_LOST or DC_ERR_TIMEOUT when a
 * survivor was lost during the shrink (shrink again), DC_ERR_NOT_SUPPORTED
 * for the MPI and singleton backends. The ring's and the mesh's (jaccl,
 * jaccl-ring) groups, their split groups and the groups they shrink to
 * can shrink, each to a group of its kind. */
DC_API dc_status dc_group_shrink(dc_group *group, dc_group **survivors);

/* Drop a reference; the last one closes the group's connections and frees
 * it. NULL is a no-op. Never blocks for longer than the group's timeout. */
DC_API void dc_group_free(dc_group *group);

/* ---- collectives ------------------------------------------------------- */

/* recv[i] = op over ranks of send[i], for i < count. */
DC_API dc_status dc_all_reduce(dc_group *group, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op);
DC_API dc_status dc_all_sum(dc_group *group, const void *send, void *recv,
                            size_t count, dc_dtype dtype);
DC_API dc_status dc_all_max(dc_group *group, const void *send, void *recv,
                            size_t count, dc_dtype dtype);
DC_API dc_status dc_all_min(dc_group *group, const void *send, void *recv,
                            size_t count, dc_dtype dtype);

/* recv holds size * count elements, rank-major: rank r's send lands at
 * recv + r * count. */
DC_API dc_status dc_all_gather(dc_group *group, const void *send, void *recv,
                               size_t count, dc_dtype dtype);

/* MLX's sum_scatter generalised: send holds size * count elements; rank r
 * receives op over ranks of send[r*count .. (r+1)*count). */
DC_API dc_status dc_reduce_scatter(dc_group *group, const void *send,
                                   void *recv, size_t count, dc_dtype dtype,
                                   dc_op op);
DC_API dc_status dc_sum_scatter(dc_group *group, const void *send, void *recv,
                                size_t count, dc_dtype dtype);

/* Point to point between any two ranks of the group. The receiver must ask
 * for the same count and dtype (checked: DC_ERR_MISMATCH). */
DC_API dc_status dc_send(dc_group *group, const void *buf, size_t count,
                         dc_dtype dtype, int dst);
DC_API dc_status dc_recv(dc_group *group, void *buf, size_t count,
                         dc_dtype dtype, int src);

/* buf on root is copied into buf on every other rank. */
DC_API dc_status dc_broadcast(dc_group *group, void *buf, size_t count,
                              dc_dtype dtype, int root);

/* All to all: send holds size * count elements, block q (send + q * count)
 * going to rank q; rank q's block for this rank lands at recv + q * count.
 * send and recv must not overlap (DC_ERR_INVALID when send == recv). */
DC_API dc_status dc_all_to_all(dc_group *group, const void *send, void *recv,
                               size_t count, dc_dtype dtype);
/* All to all with a count per rank (counts and offsets in elements, one per
 * rank): send_counts[q] elements at send + send_offsets[q] go to rank q,
 * whose recv_counts[this rank] must equal them (checked: DC_ERR_MISMATCH);
 * rank q's land at recv + recv_offsets[q]. Blocks must not overlap. */
DC_API dc_status dc_all_to_allv(dc_group *group, const void *send,
                                const size_t *send_counts,
                                const size_t *send_offsets, void *recv,
                                const size_t *recv_counts,
                                const size_t *recv_offsets, dc_dtype dtype);
/* Gather to root: root's recv holds size * count elements, rank q's send at
 * recv + q * count; recv is not used on other ranks (may be NULL). */
DC_API dc_status dc_gather(dc_group *group, const void *send, void *recv,
                           size_t count, dc_dtype dtype, int root);
/* Scatter from root: root's send holds size * count elements; rank q
 * receives send + q * count into recv. send is not used on other ranks. */
DC_API dc_status dc_scatter(dc_group *group, const void *send, void *recv,
                            size_t count, dc_dtype dtype, int root);
/* Reduce to root: root's recv[i] = op over ranks of send[i]; recv is not
 * used on other ranks (may be NULL). (dc_reduce_to, not MPI's "reduce":
 * that name is the library's element kernel.) */
DC_API dc_status dc_reduce_to(dc_group *group, const void *send, void *recv,
                              size_t count, dc_dtype dtype, dc_op op, int root);

/* Returns once every rank of the group has entered it. */
DC_API dc_status dc_barrier(dc_group *group);

/* Collectives issued on this group so far (every all_reduce, all_gather,
 * reduce_scatter, broadcast, barrier, all_to_all(v), gather, scatter,
 * reduce_to and split counts one; send/recv do
 * not). Lets tests and tools count the reductions a helper made. */
DC_API unsigned long long dc_group_collectives(const dc_group *group);

/* ---- non-blocking collectives ---------------------------------------- */

/* dc_iNAME(group, ..., &req) starts what dc_NAME does and returns at once
 * with *req set (NULL when the call itself fails). A request runs on the
 * group's progress thread, created on the first non-blocking call and
 * asleep (on a futex) when there is nothing to do, so it moves while the
 * caller computes. A group whose last requests were all waited for at once
 * stops waking the thread at each call (the wake costs more than a small
 * request; the caller's dc_wait runs it anyway): its thread then looks
 * every 0.5 ms and starts a request that has waited a whole look, so one
 * nobody waits for still starts within 1 ms, and the group goes back to
 * waking the thread at once (see src/compose/request.c).
 *
 * Order: one progress thread per group runs its requests one at a time in
 * issue order, and a blocking call (or split, or a training helper) on a
 * group with requests in flight first waits for them all. So the wire sees
 * every rank's ops in the order that rank issued them, and ranks stay in
 * step exactly as with blocking calls: every rank must issue the same
 * collectives in the same order, blocking or not (a blocking all_sum
 * against a non-blocking one is the same op and matches). A dc_wait on the
 * oldest request in flight that the thread has not started yet runs it on
 * the caller's thread instead, as a blocking call would (same order, the
 * group's own interrupt polled), saving the hand-off to the thread and back;
 * so does it for the requests ahead of the one waited for, and a blocking
 * call for those it queues behind.
 *
 * Buffers belong to the caller until the request completes (dc_wait,
 * dc_test saying done, dc_wait_all): until then the library may read send
 * buffers and write receive buffers, so do not touch them (nor free them).
 *
 * Errors: argument errors (NULL buffer, bad dtype, op, root or peer) are
 * returned by the dc_i* call itself with *req NULL, the detail in
 * dc_last_error() (rule 1 under "Errors" at the top). A failure on the wire
 * (dead peer, mismatch, timeout, interrupt) poisons the group as for blocking
 * calls: that request and every request behind it fail with the same status
 * and detail, and a non-blocking call on a poisoned group returns that status
 * at once with *req NULL (its detail copied to dc_last_error()). Every wait is
 * bounded: each request ahead makes progress or fails within the group's
 * timeout. The group's interrupt function is polled by dc_wait / dc_wait_all
 * (and by blocking calls that wait for requests): when it fires, the request
 * running fails with DC_ERR_INTERRUPTED (poisoning the group) and so do the
 * ones behind it.
 *
 * While requests are in flight, read their detail with dc_request_error(),
 * not dc_group_last_error(), and do not call dc_group_collectives().
 * Waiting on a request, and freeing it, is for the thread that uses the
 * group (one thread at a time, as for the group).
 *
 * dc_group_free() of the last reference with requests in flight waits for
 * them (each bounded as above), then stops the progress thread. Requests
 * outlive their group: dc_test, dc_wait, dc_request_error and
 * dc_request_free stay valid on them after the group is freed. */
typedef struct dc_request dc_request;

/* Wait until req completes; returns its status. req NULL: DC_ERR_INVALID. */
DC_API dc_status dc_wait(dc_request *req);
/* *done = 1 and the request's status when it has completed; *done = 0 and
 * DC_OK when not yet. Never blocks. */
DC_API dc_status dc_test(dc_request *req, int *done);
/* Wait for all n requests (NULL entries are skipped); returns DC_OK or the
 * status of the first (in array order) that failed. */
DC_API dc_status dc_wait_all(dc_request **reqs, size_t n);
/* Detail of a failed request ("all_sum: rank 2 (...) closed the
 * connection"); "" while running or after success. */
DC_API const char *dc_request_error(const dc_request *req);
/* Free a request; one still in flight is waited for first (its buffers
 * are the caller's again on return). NULL is a no-op. */
DC_API void dc_request_free(dc_request *req);

DC_API dc_status dc_iall_reduce(dc_group *group, const void *send, void *recv,
                                size_t count, dc_dtype dtype, dc_op op,
                                dc_request **req);
DC_API dc_status dc_iall_sum(dc_group *group, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_request **req);
DC_API dc_status dc_iall_max(dc_group *group, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_request **req);
DC_API dc_status dc_iall_min(dc_group *group, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_request **req);
DC_API dc_status dc_iall_gather(dc_group *group, const void *send, void *recv,
                                size_t count, dc_dtype dtype, dc_request **req);
DC_API dc_status dc_ireduce_scatter(dc_group *group, const void *send,
                                    void *recv, size_t count, dc_dtype dtype,
                                    dc_op op, dc_request **req);
DC_API dc_status dc_isum_scatter(dc_group *group, const void *send, void *recv,
                                 size_t count, dc_dtype dtype,
                                 dc_request **req);
/* Requests run one at a time: an isend to a rank that has not yet posted
 * the matching recv holds back the requests behind it (as dc_send would). */
DC_API dc_status dc_isend(dc_group *group, const void *buf, size_t count,
                          dc_dtype dtype, int dst, dc_request **req);
DC_API dc_status dc_irecv(dc_group *group, void *buf, size_t count,
                          dc_dtype dtype, int src, dc_request **req);
DC_API dc_status dc_ibroadcast(dc_group *group, void *buf, size_t count,
                               dc_dtype dtype, int root, dc_request **req);
DC_API dc_status dc_ibarrier(dc_group *group, dc_request **req);
DC_API dc_status dc_iall_to_all(dc_group *group, const void *send, void *recv,
                                size_t count, dc_dtype dtype, dc_request **req);
/* The four arrays are read when the request runs: keep them too. */
DC_API dc_status dc_iall_to_allv(dc_group *group, const void *send,
                                 const size_t *send_counts,
                                 const size_t *send_offsets, void *recv,
                                 const size_t *recv_counts,
                                 const size_t *recv_offsets, dc_dtype dtype,
                                 dc_request **req);
DC_API dc_status dc_igather(dc_group *group, const void *send, void *recv,
                            size_t count, dc_dtype dtype, int root,
                            dc_request **req);
DC_API dc_status dc_iscatter(dc_group *group, const void *send, void *recv,
                             size_t count, dc_dtype dtype, int root,
                             dc_request **req);
DC_API dc_status dc_ireduce_to(dc_group *group, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op, int root,
                               dc_request **req);

/* ---- training helpers (MLX's mlx.nn.average_gradients and friends) ----- */

/* A tensor the caller owns: count elements of dtype at data. */
typedef struct dc_tensor {
  void *data;
  size_t count;
  dc_dtype dtype;
} dc_tensor;

#define DC_ALL_REDUCE_SIZE_DEFAULT (32ll * 1024 * 1024)

/* Average tensors over the group, in place: data = all_sum(data) / size.
 * Like MLX, tensors are packed in order into buckets of at least
 * all_reduce_size bytes and each bucket is reduced with one all_sum ("few
 * large reductions instead of many small ones"); all_reduce_size <= 0 means
 * one all_sum per tensor. Tensors of different dtypes go to different
 * buckets. Integer tensors are divided with truncation toward zero (the
 * sum wraps in the dtype first); bool tensors keep the logical or of the
 * ranks (their sum); floats are multiplied by 1/size (float16 and bfloat16
 * through float32). The Python distcomm.nn has these same semantics: it
 * calls this function. n == 0 is a no-op;
 * a tensor with count 0 may have data NULL. A group of size 1 returns at
 * once. Every rank must pass the same list of (count, dtype). */
DC_API dc_status dc_average_gradients(dc_group *group, dc_tensor *tensors,
                                      size_t n, long long all_reduce_size);

/* The overlapped form (PyTorch DDP's bucketed all-reduce from backward
 * hooks). dc_average_gradients_start plans the same buckets as
 * dc_average_gradients and starts nothing; the caller then marks each
 * tensor ready with dc_average_gradients_ready as soon as its gradient is
 * final, and a bucket's all_sum starts (a non-blocking request) once all
 * its tensors are ready and every bucket before it in the list has
 * started. So list the tensors in the order they become ready (last layer
 * first) to overlap communication with the rest of backward. One
 * dc_average_gradients_wait finishes every bucket, divides, and frees avg
 * (also on failure); tensors never marked are taken as ready there. The
 * results are bit-identical to dc_average_gradients' (same all_sums on the
 * same data). Tensors belong to the library from ready until wait returns;
 * the group runs nothing else in between except other requests (blocking
 * calls queue behind the buckets). A dead peer fails the wait (or a later
 * ready) with the group's detailed error. Marking a tensor twice or out of
 * range is DC_ERR_INVALID (dc_last_error says which); avg stays usable. */
typedef struct dc_grad_average dc_grad_average;
DC_API dc_status dc_average_gradients_start(dc_group *group, dc_tensor *tensors,
                                            size_t n, long long all_reduce_size,
                                            dc_grad_average **avg);
DC_API dc_status dc_average_gradients_ready(dc_grad_average *avg, size_t index);
DC_API dc_status dc_average_gradients_wait(dc_grad_average *avg);

/* Clip gradients whose shards live on different ranks: the global norm is
 * sqrt(all_sum of each rank's sum of squares); every tensor is scaled by
 * min(max_norm / (norm + 1e-6), 1); a NaN norm leaves them as they are.
 * Floating dtypes only; max_norm must be >= 0. Always one all_sum, even in
 * a group of one. The global norm before clipping is written to
 * *total_norm when it is not NULL. Python's distcomm.nn calls this. */
DC_API dc_status dc_clip_grad_norm_sharded(dc_group *group, dc_tensor *tensors,
                                           size_t n, double max_norm,
                                           double *total_norm);

#ifdef __cplusplus
}
#endif
#endif /* DISTCOMM_H */
