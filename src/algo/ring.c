/* Bandwidth-optimal ring algorithms: every rank sends and receives
 * 2(n-1)/n of the data for all_reduce, (n-1)/n for all_gather and
 * reduce_scatter. Each lane, and for n > 2 each direction of the ring, runs
 * its own ring over its part of the buffer; segments are cut into chunks
 * so that receiving, reducing and sending overlap. */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/geometry.h"

#define CHUNK_BYTES (512u * 1024u)
#define MAX_PARTS 32

typedef struct ring {
  dc_comm *c;
  size_t es; /* element size */
  int parts, dirs, chunks;
  dc_range part[MAX_PARTS];
} ring;

/* Neighbour a part sends to (dir 0: clockwise) and receives from. */
static int next_of(const ring *R, int p) {
  return dc_mod(R->c->rank + (p / R->c->lanes == 0 ? 1 : -1), R->c->size);
}
static int prev_of(const ring *R, int p) {
  return dc_mod(R->c->rank + (p / R->c->lanes == 0 ? -1 : 1), R->c->size);
}
/* Step direction: segment indices move by -1 clockwise, +1 the other way. */
static int sign_of(const ring *R, int p) {
  return p / R->c->lanes == 0 ? -1 : 1;
}

/* elems: elements per block (all_reduce: the whole buffer, cut in n). */
static void ring_init(ring *R, dc_comm *c, size_t elems, size_t seg_elems) {
  R->c = c;
  R->es = dc_dtype_size(c->dtype);
  R->dirs = c->size > 2 ? 2 : 1;
  R->parts = c->lanes * R->dirs;
  if (R->parts > MAX_PARTS)
    R->parts = MAX_PARTS - MAX_PARTS % R->dirs;
  for (int p = 0; p < R->parts; p++)
    R->part[p] = dc_piece((dc_range){0, elems}, (size_t)R->parts, (size_t)p);
  size_t seg_bytes = seg_elems / (size_t)R->parts * R->es + R->es;
  size_t chunks = (seg_bytes + CHUNK_BYTES - 1) / CHUNK_BYTES;
  R->chunks = chunks < 1 ? 1 : (int)chunks;
}

/* Chunk j of segment q of part p, where a part is cut into nseg segments. */
static dc_range chunk_of(const ring *R, int p, int nseg, int q, int j) {
  dc_range seg = dc_piece(R->part[p], (size_t)nseg, (size_t)q);
  return dc_piece(seg, (size_t)R->chunks, (size_t)j);
}

static dc_xfer xfer(const ring *R, int peer, int p, int is_send, int reduce,
                    void *base, dc_range r) {
  return (dc_xfer){.peer = peer,
                   .lane = p % R->c->lanes,
                   .is_send = is_send,
                   .reduce = reduce,
                   .buf = (char *)base + r.off * R->es,
                   .len = r.len * R->es};
}

/* One micro-step of a phase over every part: send segment (r + d*s + so)
 * from out, receive segment (r + d*s + ro) into buf, d the part's direction
 * sign. With own set, the receive reduces: buf = own op incoming. */
static dc_status ring_step(ring *R, const void *out, void *buf, const void *own,
                           int s, int j, int so, int ro) {
  dc_xfer x[2 * MAX_PARTS];
  int n = R->c->size, r = R->c->rank;
  for (int p = 0; p < R->parts; p++) {
    int d = sign_of(R, p);
    int sq = dc_mod(r + d * (s + so), n), rq = dc_mod(r + d * (s + ro), n);
    dc_range sr = chunk_of(R, p, n, sq, j), rr = chunk_of(R, p, n, rq, j);
    x[2 * p] = xfer(R, next_of(R, p), p, 1, 0, (void *)out, sr);
    x[2 * p + 1] = xfer(R, prev_of(R, p), p, 0, own != NULL, buf, rr);
    if (own)
      x[2 * p + 1].src = (const char *)own + rr.off * R->es;
  }
  return R->c->run(R->c, x, 2 * R->parts);
}

/* Out of place, the first step sends from send and every receive reduces
 * send's values with the incoming ones into recv; segments never received
 * in the reduce-scatter are overwritten by the all-gather. */
dc_status dc_ring_all_reduce(dc_comm *c, const void *send, void *recv) {
  ring R;
  ring_init(&R, c, c->count, c->count / (size_t)c->size);
  int n = c->size;
  dc_status st = DC_OK;
  /* reduce-scatter: afterwards this rank holds segment r+1 (clockwise) */
  for (int s = 0; s < n - 1 && st == DC_OK; s++)
    for (int j = 0; j < R.chunks && st == DC_OK; j++)
      st = ring_step(&R, s == 0 ? send : recv, recv, send, s, j, 0, 1);
  /* all-gather of the reduced segments */
  for (int s = 0; s < n - 1 && st == DC_OK; s++)
    for (int j = 0; j < R.chunks && st == DC_OK; j++)
      st = ring_step(&R, recv, recv, NULL, s, j, -1, 0);
  return st;
}

dc_status dc_ring_all_gather(dc_comm *c, void *recv) {
  /* Block q (rank q's data) is segment q of a buffer of n*count elements:
   * cut each block, not the whole, so segment q is exactly block q. */
  ring R;
  int n = c->size;
  ring_init(&R, c, c->count, c->count);
  dc_status st = DC_OK;
  for (int s = 0; s < n - 1 && st == DC_OK; s++) {
    for (int j = 0; j < R.chunks && st == DC_OK; j++) {
      dc_xfer x[2 * MAX_PARTS];
      for (int p = 0; p < R.parts; p++) {
        int d = sign_of(&R, p);
        int sq = dc_mod(c->rank + d * s, n),
            rq = dc_mod(c->rank + d * (s + 1), n);
        dc_range a = dc_piece(R.part[p], (size_t)R.chunks, (size_t)j);
        dc_range sr = {a.off + (size_t)sq * c->count, a.len};
        dc_range rr = {a.off + (size_t)rq * c->count, a.len};
        x[2 * p] = xfer(&R, next_of(&R, p), p, 1, 0, recv, sr);
        x[2 * p + 1] = xfer(&R, prev_of(&R, p), p, 0, 0, recv, rr);
      }
      st = c->run(c, x, 2 * R.parts);
    }
  }
  return st;
}

/* reduce_scatter: chunk by chunk, each chunk going round the whole ring, so
 * partial sums live in two small staging buffers per part, not in a copy
 * of the input. Clockwise, step s sends the partial of block r-s-1 and
 * receives that of block r-s-2; the last receive is block r itself. */
typedef struct rs_state {
  ring R;
  const char *send;
  char *recv;
  int alias; /* recv lies inside send: land the last step in a stage first */
  char *stage[MAX_PARTS][2];
} rs_state;

static char *rs_landing(rs_state *S, int s, int p, dc_range a) {
  if (s == S->R.c->size - 2 && !S->alias)
    return S->recv + a.off * S->R.es;
  return S->stage[p][s & 1];
}

/* After the last step of a chunk, move aliased results into place. */
static void rs_land(rs_state *S, int j) {
  for (int p = 0; S->alias && p < S->R.parts; p++) {
    dc_range a = dc_piece(S->R.part[p], (size_t)S->R.chunks, (size_t)j);
    memmove(S->recv + a.off * S->R.es, S->stage[p][(S->R.c->size - 2) & 1],
            a.len * S->R.es);
  }
}

static dc_status rs_step(rs_state *S, int s, int j) {
  ring *R = &S->R;
  dc_comm *c = R->c;
  int n = c->size;
  dc_xfer x[2 * MAX_PARTS];
  for (int p = 0; p < R->parts; p++) {
    int d = sign_of(R, p);
    int rq = dc_mod(c->rank + d * (s + 2), n);
    dc_range a = dc_piece(R->part[p], (size_t)R->chunks, (size_t)j);
    size_t bytes = a.len * R->es;
    const char *own = S->send + (a.off + (size_t)rq * c->count) * R->es;
    const void *out =
        s == 0 ? S->send +
                     (a.off + (size_t)dc_mod(c->rank + d, n) * c->count) * R->es
               : S->stage[p][(s - 1) & 1];
    char *in = rs_landing(S, s, p, a);
    x[2 * p] = dc_xsend(next_of(R, p), p % c->lanes, out, bytes);
    /* in = own contribution op the peer's partial */
    x[2 * p + 1] = dc_xrecv(prev_of(R, p), p % c->lanes, in, bytes);
    x[2 * p + 1].reduce = 1;
    x[2 * p + 1].src = own;
  }
  return c->run(c, x, 2 * R->parts);
}

dc_status dc_ring_reduce_scatter(dc_comm *c, const void *send, void *recv) {
  rs_state S = {.send = send, .recv = recv};
  size_t total = c->count * (size_t)c->size * dc_dtype_size(c->dtype);
  S.alias = (const char *)recv < S.send + total &&
            S.send < (const char *)recv + total / (size_t)c->size;
  ring_init(&S.R, c, c->count, c->count);
  size_t most = (S.R.part[0].len / (size_t)S.R.chunks + 1) * S.R.es;
  char *mem = malloc(most * 2 * (size_t)S.R.parts);
  if (!mem)
    return DC_ERR_NOMEM;
  for (int p = 0; p < S.R.parts; p++)
    for (int b = 0; b < 2; b++)
      S.stage[p][b] = mem + most * (size_t)(2 * p + b);
  dc_status st = DC_OK;
  for (int j = 0; j < S.R.chunks && st == DC_OK; j++) {
    for (int s = 0; s < c->size - 1 && st == DC_OK; s++)
      st = rs_step(&S, s, j);
    if (st == DC_OK)
      rs_land(&S, j);
  }
  free(mem);
  return st;
}

/* A chain from the root clockwise: each rank receives chunk j from its left
 * neighbour while it passes chunk j-1 on, so the chain is pipelined. */
dc_status dc_ring_broadcast(dc_comm *c, void *buf, int root) {
  int n = c->size, dist = dc_mod(c->rank - root, n);
  int prev = dc_mod(c->rank - 1, n), next = dc_mod(c->rank + 1, n);
  int last = dist == n - 1, chunks = 1;
  if (c->total_bytes > CHUNK_BYTES)
    chunks = (int)((c->total_bytes + CHUNK_BYTES - 1) / CHUNK_BYTES);
  dc_range all = {0, c->total_bytes};
  dc_status st = DC_OK;
  /* step j: receive chunk j (not the root), send chunk j-1 (root: chunk j) */
  for (int j = 0; j <= chunks && st == DC_OK; j++) {
    dc_xfer x[2];
    int k = 0, out = dist == 0 ? j : j - 1;
    if (dist != 0 && j < chunks) {
      dc_range r = dc_piece(all, (size_t)chunks, (size_t)j);
      x[k++] = dc_xrecv(prev, 0, (char *)buf + r.off, r.len);
    }
    if (!last && out >= 0 && out < chunks) {
      dc_range r = dc_piece(all, (size_t)chunks, (size_t)out);
      x[k++] = dc_xsend(next, 0, (char *)buf + r.off, r.len);
    }
    if (k)
      st = c->run(c, x, k);
  }
  return st;
}

/* n-1 steps of an empty all_gather: what a rank receives at step s left
 * its sender only after that sender had heard from s ranks before it. */
dc_status dc_ring_barrier(dc_comm *c) {
  static char none;
  int prev = dc_mod(c->rank - 1, c->size), next = dc_mod(c->rank + 1, c->size);
  dc_status st = DC_OK;
  for (int s = 0; s < c->size - 1 && st == DC_OK; s++) {
    dc_xfer x[2] = {dc_xsend(next, 0, &none, 0), dc_xrecv(prev, 0, &none, 0)};
    st = c->run(c, x, 2);
  }
  return st;
}
