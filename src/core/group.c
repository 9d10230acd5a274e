/* The public calls: check arguments, refuse poisoned groups, handle the
 * size-1 case once for every backend, then forward to the backend table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/group.h"
#include "kernels/reduce.h"

dc_group *dc_group_new(const dc_backend_ops *ops, void *impl, int rank,
                       int size, uint64_t id) {
  dc_group *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->ops = ops;
  g->impl = impl;
  g->rank = rank;
  g->size = size;
  g->refs = 1;
  g->id = id;
  g->timeout_s = dc_default_timeout();
  g->verbose = dc_env_verbose();
  return g;
}

int dc_group_rank(const dc_group *g) { return g ? g->rank : -1; }
int dc_group_size(const dc_group *g) { return g ? g->size : 0; }
const char *dc_group_backend(const dc_group *g) {
  return g ? g->ops->name : "none";
}
const char *dc_group_last_error(const dc_group *g) { return g ? g->err : ""; }
unsigned long long dc_group_collectives(const dc_group *g) {
  return g ? (unsigned long long)g->seq : 0;
}

dc_status dc_group_set_timeout(dc_group *g, double seconds) {
  if (!g)
    return dc_init_fail(DC_ERR_INVALID, "set_timeout: group is NULL");
  if (!(seconds > 0)) {
    g->op_name = "set_timeout";
    return dc_fail(g, DC_ERR_INVALID, "timeout %g s is not positive", seconds);
  }
  dc_inflight_drain(g); /* the progress thread reads it */
  g->timeout_s = seconds;
  return DC_OK;
}

dc_status dc_group_set_interrupt(dc_group *g, dc_interrupt_fn fn, void *arg) {
  if (!g)
    return dc_init_fail(DC_ERR_INVALID, "set_interrupt: group is NULL");
  dc_inflight_drain(g);
  g->interrupt = fn;
  g->interrupt_arg = arg;
  dc_inflight_set_interrupt(g);
  return DC_OK;
}

dc_status dc_enter(dc_group *g, const char *name) {
  if (!g)
    return dc_init_fail(DC_ERR_INVALID, "%s: group is NULL", name);
  dc_inflight_drain(g); /* blocking calls queue behind requests in flight */
  if (g->failed != DC_OK)
    return g->failed;
  g->op_name = name;
  g->err[0] = '\0';
  return DC_OK;
}

/* The shared checks (core/check.h), their reason recorded as the group's
 * detail under the op's name. */
static dc_status fail_why(dc_group *g, dc_status st, const char *why) {
  return st == DC_OK ? DC_OK : dc_fail(g, st, "%s", why);
}

static dc_status check_buf(dc_group *g, const void *buf, const char *what,
                           size_t count, dc_dtype dtype) {
  dc_why why;
  return fail_why(g, dc_check_buf(buf, what, count, dtype, g->size, why), why);
}

static dc_status check_op(dc_group *g, dc_dtype dtype, dc_op op) {
  dc_why why;
  return fail_why(g, dc_check_op(dtype, op, why), why);
}

static dc_status check_peer(dc_group *g, int peer, const char *what,
                            int self_ok) {
  dc_why why;
  return fail_why(g, dc_check_peer(peer, what, self_ok, g->rank, g->size, why),
                  why);
}

static void copy(void *dst, const void *src, size_t bytes) {
  if (dst != src && bytes)
    memmove(dst, src, bytes);
}

#define TRY(call)                                                              \
  do {                                                                         \
    dc_status try_st_ = call;                                                  \
    if (try_st_ != DC_OK)                                                      \
      return try_st_;                                                          \
  } while (0)

static const char *reduce_name(dc_op op) {
  static const char *names[] = {"all_sum", "all_max", "all_min", "all_prod"};
  return (unsigned)op < DC_OP_COUNT ? names[op] : "all_reduce";
}

/* What all_reduce, all_gather and reduce_scatter share: checks, the
 * sequence number, and the size-1 answer, a copy, after which *done is set.
 * op NULL: the call reduces nothing (all_gather); a user's op is never
 * NULL, so every op a user passes is checked. */
static dc_status prologue(dc_group *g, const char *name, const void *send,
                          void *recv, size_t count, dc_dtype dtype,
                          const dc_op *op, int *done) {
  *done = 0;
  TRY(dc_enter(g, name));
  TRY(check_buf(g, send, "send", count, dtype));
  TRY(check_buf(g, recv, "recv", count, dtype));
  if (op)
    TRY(check_op(g, dtype, *op));
  g->seq++;
  if (g->size == 1) {
    copy(recv, send, count * dc_dtype_size(dtype));
    *done = 1;
  }
  return DC_OK;
}

dc_status dc_all_reduce(dc_group *g, const void *send, void *recv, size_t count,
                        dc_dtype dtype, dc_op op) {
  int done;
  TRY(prologue(g, reduce_name(op), send, recv, count, dtype, &op, &done));
  return done ? DC_OK : g->ops->all_reduce(g, send, recv, count, dtype, op);
}

dc_status dc_all_sum(dc_group *g, const void *s, void *r, size_t n,
                     dc_dtype t) {
  return dc_all_reduce(g, s, r, n, t, DC_SUM);
}
dc_status dc_all_max(dc_group *g, const void *s, void *r, size_t n,
                     dc_dtype t) {
  return dc_all_reduce(g, s, r, n, t, DC_MAX);
}
dc_status dc_all_min(dc_group *g, const void *s, void *r, size_t n,
                     dc_dtype t) {
  return dc_all_reduce(g, s, r, n, t, DC_MIN);
}

dc_status dc_all_gather(dc_group *g, const void *send, void *recv, size_t count,
                        dc_dtype dtype) {
  int done;
  TRY(prologue(g, "all_gather", send, recv, count, dtype, NULL, &done));
  return done ? DC_OK : g->ops->all_gather(g, send, recv, count, dtype);
}

dc_status dc_reduce_scatter(dc_group *g, const void *send, void *recv,
                            size_t count, dc_dtype dtype, dc_op op) {
  int done;
  TRY(prologue(g, op == DC_SUM ? "sum_scatter" : "reduce_scatter", send, recv,
               count, dtype, &op, &done));
  return done ? DC_OK : g->ops->reduce_scatter(g, send, recv, count, dtype, op);
}

dc_status dc_sum_scatter(dc_group *g, const void *s, void *r, size_t n,
                         dc_dtype t) {
  return dc_reduce_scatter(g, s, r, n, t, DC_SUM);
}

/* What send and recv share: the buffer is named after the call, and the
 * peer must be another rank. */
static dc_status p2p_prologue(dc_group *g, const char *name, const void *buf,
                              size_t count, dc_dtype dtype, int peer,
                              const char *peer_what) {
  TRY(dc_enter(g, name));
  TRY(check_buf(g, buf, name, count, dtype));
  return check_peer(g, peer, peer_what, 0);
}

dc_status dc_send(dc_group *g, const void *buf, size_t count, dc_dtype dtype,
                  int dst) {
  TRY(p2p_prologue(g, "send", buf, count, dtype, dst, "dst"));
  return g->ops->send(g, buf, count, dtype, dst);
}

dc_status dc_recv(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                  int src) {
  TRY(p2p_prologue(g, "recv", buf, count, dtype, src, "src"));
  return g->ops->recv(g, buf, count, dtype, src);
}

dc_status dc_broadcast(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                       int root) {
  TRY(dc_enter(g, "broadcast"));
  TRY(check_buf(g, buf, "buffer", count, dtype));
  TRY(check_peer(g, root, "root", 1));
  g->seq++;
  if (g->size == 1)
    return DC_OK;
  return g->ops->broadcast(g, buf, count, dtype, root);
}

dc_status dc_barrier(dc_group *g) {
  TRY(dc_enter(g, "barrier"));
  g->seq++;
  if (g->size == 1)
    return DC_OK;
  return g->ops->barrier(g);
}

/* ---- all_to_all, gather, scatter, reduce_to ---------------------------- */

/* What the rooted ops share: the root, the buffer this rank uses, and the
 * sequence number. */
static dc_status rooted_prologue(dc_group *g, const char *name, const void *buf,
                                 size_t count, dc_dtype dtype, int root) {
  TRY(dc_enter(g, name));
  TRY(check_buf(g, buf, "buffer", count, dtype));
  TRY(check_peer(g, root, "root", 1));
  g->seq++;
  return DC_OK;
}

dc_status dc_all_to_all(dc_group *g, const void *send, void *recv, size_t count,
                        dc_dtype dtype) {
  TRY(dc_enter(g, "all_to_all"));
  TRY(check_buf(g, send, "send", count, dtype));
  TRY(check_buf(g, recv, "recv", count, dtype));
  if (send == recv && count > 0)
    return dc_fail(g, DC_ERR_INVALID, "send and recv are the same buffer");
  g->seq++;
  if (g->size == 1) {
    copy(recv, send, count * dc_dtype_size(dtype));
    return DC_OK;
  }
  return g->ops->all_to_all(g, send, recv, count, dtype);
}

/* Each block's end fits size_t; this rank's block to itself agrees. */
static dc_status check_v(dc_group *g, const void *buf, const size_t *cnt,
                         const size_t *off, const char *what, dc_dtype dtype) {
  if (!cnt || !off)
    return dc_fail(g, DC_ERR_INVALID, "%s counts or offsets are NULL", what);
  size_t es = dc_dtype_size(dtype);
  for (int q = 0; q < g->size; q++) {
    if (cnt[q] > SIZE_MAX / es || off[q] > SIZE_MAX / es - cnt[q])
      return dc_fail(g, DC_ERR_INVALID,
                     "%s block %d (offset %zu, count %zu) overflows size_t",
                     what, q, off[q], cnt[q]);
    if (!buf && cnt[q] > 0)
      return dc_fail(g, DC_ERR_INVALID, "%s buffer is NULL with count %zu",
                     what, cnt[q]);
  }
  return DC_OK;
}

dc_status dc_all_to_allv(dc_group *g, const void *send, const size_t *scnt,
                         const size_t *soff, void *recv, const size_t *rcnt,
                         const size_t *roff, dc_dtype dtype) {
  TRY(dc_enter(g, "all_to_allv"));
  if ((unsigned)dtype >= DC_DTYPE_COUNT)
    return dc_fail(g, DC_ERR_INVALID, "dtype %d is not a dc_dtype", dtype);
  TRY(check_v(g, send, scnt, soff, "send", dtype));
  TRY(check_v(g, recv, rcnt, roff, "recv", dtype));
  int me = g->rank;
  if (scnt[me] != rcnt[me])
    return dc_fail(g, DC_ERR_MISMATCH,
                   "this rank sends itself %zu elements but expects %zu",
                   scnt[me], rcnt[me]);
  g->seq++;
  if (g->size == 1) {
    size_t es = dc_dtype_size(dtype);
    copy((char *)recv + roff[0] * es, (const char *)send + soff[0] * es,
         scnt[0] * es);
    return DC_OK;
  }
  return g->ops->all_to_allv(g, send, scnt, soff, recv, rcnt, roff, dtype);
}

dc_status dc_gather(dc_group *g, const void *send, void *recv, size_t count,
                    dc_dtype dtype, int root) {
  TRY(rooted_prologue(g, "gather", send, count, dtype, root));
  if (g->rank == root)
    TRY(check_buf(g, recv, "recv", count, dtype));
  if (g->size == 1) {
    copy(recv, send, count * dc_dtype_size(dtype));
    return DC_OK;
  }
  return g->ops->gather(g, send, recv, count, dtype, root);
}

dc_status dc_scatter(dc_group *g, const void *send, void *recv, size_t count,
                     dc_dtype dtype, int root) {
  TRY(rooted_prologue(g, "scatter", recv, count, dtype, root));
  if (g->rank == root)
    TRY(check_buf(g, send, "send", count, dtype));
  if (g->size == 1) {
    copy(recv, send, count * dc_dtype_size(dtype));
    return DC_OK;
  }
  return g->ops->scatter(g, send, recv, count, dtype, root);
}

dc_status dc_reduce_to(dc_group *g, const void *send, void *recv, size_t count,
                       dc_dtype dtype, dc_op op, int root) {
  TRY(dc_enter(g, "reduce_to"));
  TRY(check_op(g, dtype, op));
  TRY(rooted_prologue(g, "reduce_to", send, count, dtype, root));
  if (g->rank == root)
    TRY(check_buf(g, recv, "recv", count, dtype));
  if (g->size == 1) {
    copy(recv, send, count * dc_dtype_size(dtype));
    return DC_OK;
  }
  return g->ops->reduce_to(g, send, recv, count, dtype, op, root);
}

/* Before a shrink, the old group is poisoned (if it is not yet), so that
 * peers blocked in it wake; the backend calls it once it can shrink. */
void dc_shrink_poison(dc_group *g) {
  if (g->failed != DC_OK)
    return;
  g->op_name = "shrink";
  dc_fail(g, DC_ERR_ABORTED, "the group was shrunk (dc_group_shrink)");
  g->failed = DC_ERR_ABORTED; /* ABORTED alone does not poison */
  if (g->ops->poison)
    g->ops->poison(g);
  g->op_name = NULL;
}

/* The backend's detail goes to dc_last_error (the old group keeps its
 * first failure's). */
dc_status dc_group_shrink(dc_group *g, dc_group **out) {
  if (!out)
    return dc_init_fail(DC_ERR_INVALID, "shrink: survivors is NULL");
  *out = NULL;
  if (!g)
    return dc_init_fail(DC_ERR_INVALID, "shrink: group is NULL");
  if (!g->ops->shrink)
    return dc_init_fail(DC_ERR_NOT_SUPPORTED,
                        "shrink: not supported on the %s backend: it cannot "
                        "go on without a lost rank",
                        g->ops->name);
  dc_inflight_drain(g);
  char err[512] = "";
  dc_status st = g->ops->shrink(g, out, err, sizeof err);
  if (st != DC_OK)
    return dc_init_fail(st, "shrink: rank %d of %d: %s", g->rank, g->size, err);
  (*out)->timeout_s = g->timeout_s;
  (*out)->verbose = g->verbose;
  dc_log(*out, "shrunk from %d to %d ranks: rank %d is now %d", g->size,
         (*out)->size, g->rank, (*out)->rank);
  return DC_OK;
}
