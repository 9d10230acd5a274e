/* The ring backend's table: each op frames itself for the engine and runs
 * the algorithm chosen in src/algo/select.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/algo.h"
#include "algo/tune.h"
#include "backends/native/native.h"
#include "transport/frame.h"

#define P2P_MAX_LANES 64 /* transfers of one send or recv */

static dc_engine *tcp_of(dc_group *g) { return ((ring_impl *)g->impl)->tcp; }

/* Collectives run one ring per hostfile address: extra sockets per address
 * measured slower for them on loopback (bench/README.md), while
 * point-to-point gains from striping over every socket. */
static void begin(dc_group *g, dc_comm *c, uint8_t opcode, size_t count,
                  dc_dtype dtype, dc_op op, uint32_t aux) {
  ring_impl *R = g->impl;
  dc_engine_begin(R->tcp, c, opcode, count, dtype, op, aux, (uint32_t)g->seq);
  c->tune = R->tune;
  c->lanes = R->naddrs;
  c->neighbours_only = R->neighbours;
  c->full_mesh = R->per_peer && !R->neighbours;
  c->direct_ranks = R->direct_ranks;
}

/* Algorithms return DC_ERR_NOMEM without a detail; everything else has one. */
static dc_status done(dc_group *g, dc_status st) {
  if (st != DC_OK && g->err[0] == '\0')
    return dc_fail(g, st, "%s", dc_strerror(st));
  return st;
}

static dc_status ring_all_reduce(dc_group *g, const void *send, void *recv,
                                 size_t count, dc_dtype dtype, dc_op op) {
  if (ring_hier_takes(g, count, dtype))
    return done(g, ring_hier_all_reduce(g, send, recv, count, dtype, op));
  dc_comm c;
  begin(g, &c, DC_OPC_ALL_REDUCE, count, dtype, op, 0);
  return done(g, dc_algo_all_reduce(&c, send, recv));
}

static dc_status ring_all_gather(dc_group *g, const void *send, void *recv,
                                 size_t count, dc_dtype dtype) {
  dc_comm c;
  begin(g, &c, DC_OPC_ALL_GATHER, count, dtype, DC_SUM, 0);
  return done(g, dc_algo_all_gather(&c, send, recv));
}

static dc_status ring_reduce_scatter(dc_group *g, const void *send, void *recv,
                                     size_t count, dc_dtype dtype, dc_op op) {
  dc_comm c;
  begin(g, &c, DC_OPC_REDUCE_SCATTER, count, dtype, op, 0);
  return done(g, dc_algo_reduce_scatter(&c, send, recv));
}

static dc_status ring_broadcast(dc_group *g, void *buf, size_t count,
                                dc_dtype dtype, int root) {
  dc_comm c;
  begin(g, &c, DC_OPC_BROADCAST, count, dtype, DC_SUM, (uint32_t)root);
  return done(g, dc_algo_broadcast(&c, buf, root));
}

static dc_status ring_barrier(dc_group *g) {
  dc_comm c;
  begin(g, &c, DC_OPC_BARRIER, 0, DC_UINT8, DC_SUM, 0);
  return done(g, dc_algo_barrier(&c));
}

static dc_status nonneighbours(dc_group *g, dc_status st) {
  if (st != DC_ERR_NOT_SUPPORTED || g->err[0])
    return st;
  return dc_fail(g, st,
                 "every rank talks to every rank, but only ring "
                 "neighbours are connected (DISTCOMM_RING_NEIGHBOURS=1 or "
                 "jaccl-ring)");
}

/* Counts and offsets in elements to bytes: one allocation of 4 arrays. */
static dc_status ring_all_to_allv_as(dc_group *g, uint8_t opcode, size_t count,
                                     const void *send, const size_t *scnt,
                                     const size_t *soff, void *recv,
                                     const size_t *rcnt, const size_t *roff,
                                     dc_dtype dtype) {
  size_t n = (size_t)g->size, es = dc_dtype_size(dtype);
  size_t *b = malloc(4 * n * sizeof *b);
  if (!b)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %zu block sizes", 4 * n);
  for (size_t q = 0; q < n; q++) {
    b[q] = soff[q] * es, b[n + q] = scnt[q] * es;
    b[2 * n + q] = roff[q] * es, b[3 * n + q] = rcnt[q] * es;
  }
  dc_comm c;
  begin(g, &c, opcode, count, dtype, DC_SUM, 0);
  dc_status st =
      dc_algo_all_to_allv(&c, send, b, b + n, recv, b + 2 * n, b + 3 * n);
  free(b);
  return done(g, nonneighbours(g, st));
}

static dc_status ring_all_to_allv(dc_group *g, const void *send,
                                  const size_t *scnt, const size_t *soff,
                                  void *recv, const size_t *rcnt,
                                  const size_t *roff, dc_dtype dtype) {
  /* count 0 in the frames: per-pair lengths are checked instead */
  return ring_all_to_allv_as(g, DC_OPC_ALL_TO_ALLV, 0, send, scnt, soff, recv,
                             rcnt, roff, dtype);
}

static dc_status ring_all_to_all(dc_group *g, const void *send, void *recv,
                                 size_t count, dc_dtype dtype) {
  size_t n = (size_t)g->size;
  size_t *v = malloc(2 * n * sizeof *v);
  if (!v)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %zu offsets", 2 * n);
  for (size_t q = 0; q < n; q++)
    v[q] = count, v[n + q] = q * count;
  dc_status st = ring_all_to_allv_as(g, DC_OPC_ALL_TO_ALL, count, send, v,
                                     v + n, recv, v, v + n, dtype);
  free(v);
  return st;
}

static dc_status ring_gather(dc_group *g, const void *send, void *recv,
                             size_t count, dc_dtype dtype, int root) {
  dc_comm c;
  begin(g, &c, DC_OPC_GATHER, count, dtype, DC_SUM, (uint32_t)root);
  dc_status st = dc_algo_gather(&c, send, recv, c.total_bytes, root);
  return done(g, nonneighbours(g, st));
}

static dc_status ring_scatter(dc_group *g, const void *send, void *recv,
                              size_t count, dc_dtype dtype, int root) {
  dc_comm c;
  begin(g, &c, DC_OPC_SCATTER, count, dtype, DC_SUM, (uint32_t)root);
  dc_status st = dc_algo_scatter(&c, send, recv, c.total_bytes, root);
  return done(g, nonneighbours(g, st));
}

/* An all_reduce whose result only the root keeps: bandwidth-optimal on
 * the ring, and bit-identical to all_reduce. Other ranks use scratch. */
static dc_status ring_reduce_to(dc_group *g, const void *send, void *recv,
                                size_t count, dc_dtype dtype, dc_op op,
                                int root) {
  size_t bytes = count * dc_dtype_size(dtype);
  void *out = recv;
  if (g->rank != root && !(out = malloc(bytes ? bytes : 1)))
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %zu bytes of scratch",
                   bytes);
  dc_comm c;
  begin(g, &c, DC_OPC_REDUCE_TO, count, dtype, op, (uint32_t)root);
  dc_status st = dc_algo_all_reduce(&c, send, out);
  if (out != recv)
    free(out);
  return done(g, st);
}

/* A send that could go by single copy tells the tuner what its path took
 * (the vote was ring_p2p_send_pulled's); t0 < 0: not measured. */
static dc_status tuned(dc_comm *c, double t0, int pulled, dc_status st) {
  if (st == DC_OK && t0 >= 0)
    dc_tune_record(c->tune, DC_TUNE_P2P, c->total_bytes, pulled, dc_now() - t0);
  return st;
}

/* Point to point: the message is cut across the lanes; frames carry a
 * counter per pair so a send that meets no matching recv is caught. */
static dc_status p2p(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                     int peer, int is_send) {
  dc_engine *t = tcp_of(g);
  ring_impl *R = g->impl;
  if (R->neighbours && g->size > 2 && peer != (g->rank + 1) % g->size &&
      peer != (g->rank + g->size - 1) % g->size)
    return dc_fail(g, DC_ERR_NOT_SUPPORTED,
                   "%s rank %d: only ring neighbours (%d and %d) are "
                   "connected (DISTCOMM_RING_NEIGHBOURS=1 or jaccl-ring)",
                   is_send ? "send to" : "recv from", peer,
                   (g->rank + g->size - 1) % g->size, (g->rank + 1) % g->size);
  uint32_t seq = is_send ? ++t->p2p_tx[peer] : ++t->p2p_rx[peer];
  dc_comm c;
  dc_engine_begin(t, &c, DC_OPC_SEND, count, dtype, DC_SUM, 0, seq);
  c.tune = R->tune;
  size_t es = dc_dtype_size(dtype);
  /* Both ends cut the message alike: over P2P_MAX_LANES lanes the extra
   * ones stay idle (every piece must have a transfer, or bytes go missing). */
  int lanes = count * es >= ((size_t)1 << 20) ? t->lanes : 1;
  lanes = lanes < P2P_MAX_LANES ? lanes : P2P_MAX_LANES;
  /* one lane (under 1 MiB): no divisions on a small message's latency */
  size_t piece = lanes == 1 ? count * es
                            : (count + (size_t)lanes - 1) / (size_t)lanes * es;
  int single = ring_p2p_single_copy(&c, piece), pulled = 0;
  double t0 = single && is_send && c.tune ? dc_now() : -1.0;
  if (single) {
    dc_status st =
        is_send ? ring_p2p_send_pulled(t, &c, buf, count * es, peer, &pulled)
                : ring_p2p_recv_pulled(t, &c, buf, count * es, peer, &pulled);
    if (st != DC_OK || pulled)
      return done(g, tuned(&c, t0, pulled, st));
  }
  dc_xfer x[P2P_MAX_LANES];
  size_t a = 0; /* lane l: elements [a, b) */
  for (int l = 0; l < lanes; l++) {
    size_t b = l + 1 == lanes ? count : count * (size_t)(l + 1) / (size_t)lanes;
    x[l] = is_send ? dc_xsend(peer, l, (char *)buf + a * es, (b - a) * es)
                   : dc_xrecv(peer, l, (char *)buf + a * es, (b - a) * es);
    a = b;
  }
  return done(g, tuned(&c, t0, 0, c.run(&c, x, lanes)));
}

static dc_status ring_send(dc_group *g, const void *buf, size_t count,
                           dc_dtype dtype, int dst) {
  return p2p(g, (void *)buf, count, dtype, dst, 1);
}

static dc_status ring_recv(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                           int src) {
  return p2p(g, buf, count, dtype, src, 0);
}

static void ring_destroy(dc_group *g) {
  ring_impl *R = g->impl;
  if (!R)
    return;
  ring_hier_free(R->hier); /* its groups before the connections they used */
  dc_engine_free(R->tcp);
  free(R->tune);
  free(R->self);
  for (int i = 0; i < R->nkept; i++)
    close(R->kept_fds[i]);
  free(R->kept_fds);
  free(R->world);
  free(R);
}

static void ring_poison(dc_group *g) {
  ring_impl *R = g->impl;
  if (R && R->tcp)
    dc_engine_poison(R->tcp, g->failed, g->err);
  if (R)
    ring_hier_poison(g);
}

dc_status ring_split(dc_group *g, const int *ranks, int n, int me, uint64_t id,
                     dc_group **out);

/* The mesh backend is the ring's code over per-pair links: same table, its
 * own name (dc_group_backend). */
#define RING_OPS(backend_name)                                                 \
  {                                                                            \
    .name = backend_name, .all_reduce = ring_all_reduce,                       \
    .all_gather = ring_all_gather, .reduce_scatter = ring_reduce_scatter,      \
    .send = ring_send, .recv = ring_recv, .broadcast = ring_broadcast,         \
    .barrier = ring_barrier, .all_to_allv = ring_all_to_allv,                  \
    .all_to_all = ring_all_to_all, .gather = ring_gather,                      \
    .scatter = ring_scatter, .reduce_to = ring_reduce_to, .split = ring_split, \
    .destroy = ring_destroy, .poison = ring_poison, .shrink = ring_shrink,     \
  }

const dc_backend_ops dc_ring_ops = RING_OPS("ring");
const dc_backend_ops dc_mesh_ops = RING_OPS("mesh");
