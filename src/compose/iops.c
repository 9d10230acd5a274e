/* The public non-blocking calls: each packs the blocking call's arguments
 * into a request for the group's progress thread (async/request.c), which
 * runs the blocking call, checks included. */
#include "compose/async.h"
#include "core/group.h"

static dc_status issue(dc_group *g, const char *name, dc_rq_args a,
                       dc_request **req) {
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
