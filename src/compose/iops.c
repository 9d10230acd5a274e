/* The public non-blocking calls: each checks its arguments (an error is
 * returned by the call, not at dc_wait), then packs them into a request for
 * the group's progress thread (compose/request.c), which runs the blocking
 * call. */
#include <stdint.h>

#include "compose/async.h"
#include "core/check.h"
#include "core/group.h"
#include "kernels/reduce.h"

static int has_op(dc_rq_kind k) {
  return k == DC_RQ_ALL_REDUCE || k == DC_RQ_REDUCE_SCATTER ||
         k == DC_RQ_REDUCE_TO;
}

/* Argument errors are returned by the call itself (*req NULL), their
 * detail in dc_last_error(): requests in flight may be writing the group's
 * own detail. Only what every rank knows alone is read here (size, rank). The
 * shared checks (core/check.h) give the reason; the call's name leads. */
static dc_status refuse_why(const char *name, dc_status st, const char *why) {
  return st == DC_OK ? DC_OK : dc_init_fail(st, "%s: %s", name, why);
}

/* dst/src: another rank; root: any rank of the group. */
static dc_status check_peer(const dc_group *g, const char *name,
                            const dc_rq_args *x) {
  static const char *what[] = {
      [DC_RQ_SEND] = "dst",       [DC_RQ_RECV] = "src",
      [DC_RQ_BROADCAST] = "root", [DC_RQ_GATHER] = "root",
      [DC_RQ_SCATTER] = "root",   [DC_RQ_REDUCE_TO] = "root"};
  if (x->kind >= sizeof what / sizeof what[0] || !what[x->kind])
    return DC_OK;
  int self_ok = x->kind != DC_RQ_SEND && x->kind != DC_RQ_RECV;
  dc_why why;
  return refuse_why(
      name,
      dc_check_peer(x->peer, what[x->kind], self_ok, g->rank, g->size, why),
      why);
}

static dc_status check_kinds(const char *name, const dc_rq_args *x) {
  dc_why why;
  if (x->kind == DC_RQ_BARRIER)
    return DC_OK;
  if (has_op(x->kind))
    return refuse_why(name, dc_check_op(x->dtype, x->op, why), why);
  return refuse_why(name, dc_check_dtype(x->dtype, why), why);
}

/* The buffers this rank uses: send, recv (root-only ones elsewhere); one
 * with count 0 may be NULL. */
static dc_status check_bufs(const dc_group *g, const char *name,
                            const dc_rq_args *x) {
  dc_why why;
  if (x->kind == DC_RQ_BARRIER || x->kind == DC_RQ_ALL_TO_ALLV)
    return DC_OK; /* all_to_allv: its arrays are checked when it runs */
  int root = x->peer == g->rank;
  int use_send = x->kind != DC_RQ_RECV && x->kind != DC_RQ_BROADCAST &&
                 (x->kind != DC_RQ_SCATTER || root);
  int use_recv =
      x->kind != DC_RQ_SEND &&
      ((x->kind != DC_RQ_GATHER && x->kind != DC_RQ_REDUCE_TO) || root);
  const void *send = use_send ? x->send : x;
  const void *recv = use_recv ? x->recv : x; /* x: not used, so not NULL */
  dc_status st = dc_check_buf(send, "send", x->count, x->dtype, g->size, why);
  if (st == DC_OK)
    st = dc_check_buf(recv, "recv", x->count, x->dtype, g->size, why);
  if (st != DC_OK)
    return refuse_why(name, st, why);
  if (x->kind == DC_RQ_ALL_TO_ALL && x->count > 0 && x->send == x->recv)
    return dc_init_fail(DC_ERR_INVALID, "%s: send and recv are the same buffer",
                        name);
  return DC_OK;
}

static dc_status issue(dc_group *g, const char *name, dc_rq_args a,
                       dc_request **req) {
  if (req)
    *req = NULL;
  if (g && req) {
    dc_status st = check_kinds(name, &a);
    if (st == DC_OK)
      st = check_peer(g, name, &a);
    if (st == DC_OK)
      st = check_bufs(g, name, &a);
    if (st != DC_OK)
      return st;
  }
  return dc_async_issue(g, name, &a, req);
}

static const char *ireduce_name(dc_op op) {
  static const char *names[] = {"iall_sum", "iall_max", "iall_min",
                                "iall_prod"};
  return (unsigned)op < DC_OP_COUNT ? names[op] : "iall_reduce";
}

dc_status dc_iall_reduce(dc_group *g, const void *send, void *recv,
                         size_t count, dc_dtype dtype, dc_op op,
                         dc_request **req) {
  return issue(g, ireduce_name(op),
               (dc_rq_args){.kind = DC_RQ_ALL_REDUCE,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype,
                            .op = op},
               req);
}

dc_status dc_iall_sum(dc_group *g, const void *s, void *r, size_t n, dc_dtype t,
                      dc_request **req) {
  return dc_iall_reduce(g, s, r, n, t, DC_SUM, req);
}
dc_status dc_iall_max(dc_group *g, const void *s, void *r, size_t n, dc_dtype t,
                      dc_request **req) {
  return dc_iall_reduce(g, s, r, n, t, DC_MAX, req);
}
dc_status dc_iall_min(dc_group *g, const void *s, void *r, size_t n, dc_dtype t,
                      dc_request **req) {
  return dc_iall_reduce(g, s, r, n, t, DC_MIN, req);
}

dc_status dc_iall_gather(dc_group *g, const void *send, void *recv,
                         size_t count, dc_dtype dtype, dc_request **req) {
  return issue(g, "iall_gather",
               (dc_rq_args){.kind = DC_RQ_ALL_GATHER,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype},
               req);
}

dc_status dc_ireduce_scatter(dc_group *g, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_op op,
                             dc_request **req) {
  return issue(g, op == DC_SUM ? "isum_scatter" : "ireduce_scatter",
               (dc_rq_args){.kind = DC_RQ_REDUCE_SCATTER,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype,
                            .op = op},
               req);
}

dc_status dc_isum_scatter(dc_group *g, const void *s, void *r, size_t n,
                          dc_dtype t, dc_request **req) {
  return dc_ireduce_scatter(g, s, r, n, t, DC_SUM, req);
}

dc_status dc_isend(dc_group *g, const void *buf, size_t count, dc_dtype dtype,
                   int dst, dc_request **req) {
  return issue(g, "isend",
               (dc_rq_args){.kind = DC_RQ_SEND,
                            .send = buf,
                            .count = count,
                            .dtype = dtype,
                            .peer = dst},
               req);
}

dc_status dc_irecv(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                   int src, dc_request **req) {
  return issue(g, "irecv",
               (dc_rq_args){.kind = DC_RQ_RECV,
                            .recv = buf,
                            .count = count,
                            .dtype = dtype,
                            .peer = src},
               req);
}

dc_status dc_ibroadcast(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                        int root, dc_request **req) {
  return issue(g, "ibroadcast",
               (dc_rq_args){.kind = DC_RQ_BROADCAST,
                            .recv = buf,
                            .count = count,
                            .dtype = dtype,
                            .peer = root},
               req);
}

dc_status dc_ibarrier(dc_group *g, dc_request **req) {
  return issue(g, "ibarrier", (dc_rq_args){.kind = DC_RQ_BARRIER}, req);
}

dc_status dc_iall_to_all(dc_group *g, const void *send, void *recv,
                         size_t count, dc_dtype dtype, dc_request **req) {
  return issue(g, "iall_to_all",
               (dc_rq_args){.kind = DC_RQ_ALL_TO_ALL,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype},
               req);
}

dc_status dc_iall_to_allv(dc_group *g, const void *send, const size_t *scnt,
                          const size_t *soff, void *recv, const size_t *rcnt,
                          const size_t *roff, dc_dtype dtype,
                          dc_request **req) {
  return issue(g, "iall_to_allv",
               (dc_rq_args){.kind = DC_RQ_ALL_TO_ALLV,
                            .send = send,
                            .recv = recv,
                            .dtype = dtype,
                            .scnt = scnt,
                            .soff = soff,
                            .rcnt = rcnt,
                            .roff = roff},
               req);
}

dc_status dc_igather(dc_group *g, const void *send, void *recv, size_t count,
                     dc_dtype dtype, int root, dc_request **req) {
  return issue(g, "igather",
               (dc_rq_args){.kind = DC_RQ_GATHER,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype,
                            .peer = root},
               req);
}

dc_status dc_iscatter(dc_group *g, const void *send, void *recv, size_t count,
                      dc_dtype dtype, int root, dc_request **req) {
  return issue(g, "iscatter",
               (dc_rq_args){.kind = DC_RQ_SCATTER,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype,
                            .peer = root},
               req);
}

dc_status dc_ireduce_to(dc_group *g, const void *send, void *recv, size_t count,
                        dc_dtype dtype, dc_op op, int root, dc_request **req) {
  return issue(g, "ireduce_to",
               (dc_rq_args){.kind = DC_RQ_REDUCE_TO,
                            .send = send,
                            .recv = recv,
                            .count = count,
                            .dtype = dtype,
                            .op = op,
                            .peer = root},
               req);
}
