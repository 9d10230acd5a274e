/* Latency-optimal algorithms for small messages: one batch in which every
 * rank exchanges with every other rank directly. Reductions are done in
 * rank order on every rank, so all ranks get bit-identical results. */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "kernels/reduce.h"

/* Exchange with every peer: send sendbuf(q) to q, receive from q into
 * recvbuf(q). Returns the batch status. */
typedef const void *(*pick_send)(void *ctx, int q);
typedef void *(*pick_recv)(void *ctx, int q);

static dc_status exchange(dc_comm *c, size_t len, pick_send ps, pick_recv pr,
                          void *ctx) {
  dc_xfer local[64];
  int n = 2 * (c->size - 1), k = 0;
  dc_xfer *x = n <= 64 ? local : malloc(sizeof *x * (size_t)n);
  if (!x)
    return DC_ERR_NOMEM;
  /* Start with the next rank and go round, so ranks do not all hit rank 0. */
  for (int i = 1; i < c->size; i++) {
    int to = c->rank + i, from = c->rank - i;
    to -= to >= c->size ? c->size : 0; /* no division on the latency path */
    from += from < 0 ? c->size : 0;
    x[k++] = dc_xsend(to, 0, ps(ctx, to), len);
    x[k++] = dc_xrecv(from, 0, pr(ctx, from), len);
  }
  dc_status st = c->run(c, x, k);
  if (x != local)
    free(x);
  return st;
}

typedef struct bufs {
  const char *send;
  char *recv;
  size_t block; /* bytes per rank */
  int whole;    /* send the whole send buffer to everyone */
} bufs;

static const void *send_block(void *ctx, int q) {
  bufs *b = ctx;
  return b->whole ? b->send : b->send + (size_t)q * b->block;
}
static void *recv_block(void *ctx, int q) {
  bufs *b = ctx;
  return b->recv + (size_t)q * b->block;
}

/* everyone's contribution lands in scratch[q]; reduce them in rank order */
static dc_status gather_reduce(dc_comm *c, bufs *b, const void *own,
                               void *out) {
  size_t len = b->block, need = len * (size_t)c->size;
  /* latency path: no malloc for tiny ops (1 KiB on 4 ranks, 2 KiB on 2) */
  _Alignas(64) char small[4096];
  char *scratch = need <= sizeof small ? small : malloc(need);
  if (!scratch)
    return DC_ERR_NOMEM;
  b->recv = scratch;
  if (len) /* count 0: headers still travel (mismatch checks), no data */
    memcpy(scratch + (size_t)c->rank * len, own, len);
  dc_status st = exchange(c, len, send_block, recv_block, b);
  if (st == DC_OK) {
    size_t count = len / dc_dtype_size(c->dtype);
    for (int q = 1; q < c->size; q++)
      dc_reduce(scratch, scratch + (size_t)q * len, count, c->dtype, c->op);
    if (len)
      memcpy(out, scratch, len);
  }
  if (scratch != small)
    free(scratch);
  return st;
}

dc_status dc_direct_all_reduce(dc_comm *c, const void *send, void *recv) {
  bufs b = {.send = send, .block = c->total_bytes, .whole = 1};
  return gather_reduce(c, &b, send, recv);
}

dc_status dc_direct_reduce_scatter(dc_comm *c, const void *send, void *recv) {
  bufs b = {.send = send, .block = c->total_bytes};
  return gather_reduce(c, &b, (const char *)send + (size_t)c->rank * b.block,
                       recv);
}

dc_status dc_direct_all_gather(dc_comm *c, const void *send, void *recv) {
  bufs b = {.send = send, .recv = recv, .block = c->total_bytes, .whole = 1};
  if (b.block)
    memmove(b.recv + (size_t)c->rank * b.block, send, b.block);
  /* after the move, our block is what we send (send may alias recv) */
  b.send = b.recv + (size_t)c->rank * b.block;
  return exchange(c, b.block, send_block, recv_block, &b);
}

typedef struct round {
  const void *mine;
  char *theirs;
  size_t len;
} round;

static const void *round_send(void *ctx, int q) {
  (void)q;
  return ((round *)ctx)->mine;
}
static void *round_recv(void *ctx, int q) {
  round *r = ctx;
  return r->theirs + (size_t)q * r->len;
}

dc_status dc_direct_round(dc_comm *c, const void *mine, void *theirs,
                          size_t len) {
  round r = {mine, theirs, len};
  return exchange(c, len, round_send, round_recv, &r);
}

dc_status dc_direct_barrier(dc_comm *c) {
  static char none;
  bufs b = {.send = &none, .recv = &none, .block = 0, .whole = 1};
  return exchange(c, 0, send_block, recv_block, &b);
}
