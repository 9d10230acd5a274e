/* Small ops for large groups: log2(size) rounds of one exchange each.
 *
 * Direct exchange (direct.c) is one batch in which every rank sends to and
 * hears from every other: the fewest round trips, but size - 1 frames per
 * rank, and a wait that looks at every one of them. At 256 ranks on one
 * host that is 65280 frames for a 10-float all_sum (bench/scale/many-ranks.md);
 * here it is 8 rounds of one frame each way per rank.
 *
 * all_reduce is recursive doubling over the largest power of two p of
 * ranks; each of the size - p others first hands its operand to its left
 * neighbour and at the end gets the result back from it. Partners reduce the
 * same two operands, and dc_reduce gives the same bits whichever is first, so
 * every rank ends with the same bits (but not the rank-order sum of
 * direct exchange: the tree is ((x0 x1) (x2 x3)) ...). */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "kernels/reduce.h"

static int pow2_floor(int n) {
  int p = 1;
  while (p <= n / 2)
    p *= 2;
  return p;
}

static int log2_of(int p) {
  int k = 0;
  while ((1 << k) < p)
    k++;
  return k;
}

static dc_status one(dc_comm *c, dc_xfer x) { return c->run(c, &x, 1); }

/* Our operand to the rank that reduces for us, and the result back: one
 * batch, or two in place (no transfer may write what another in its batch
 * still reads, whatever the transport buffers). */
static dc_status hand_over(dc_comm *c, int to, const void *send, void *recv) {
  dc_xfer x[2] = {dc_xsend(to, 0, send, c->total_bytes),
                  dc_xrecv(to, 0, recv, c->total_bytes)};
  if (send != recv)
    return c->run(c, x, 2);
  dc_status st = one(c, x[0]);
  return st == DC_OK ? one(c, x[1]) : st;
}

/* One step: send cur to peer while its operand arrives and is reduced with
 * cur into nxt (never into cur, which may still be on its way). Both
 * partners put the lower rank's operand first: of two NaNs a sum keeps the
 * first's payload, and the two must hold the same bits. */
static dc_status step(dc_comm *c, int peer, const void *cur, void *nxt) {
  dc_xfer x[2] = {dc_xsend(peer, 0, cur, c->total_bytes),
                  dc_xrecv(peer, 0, nxt, c->total_bytes)};
  int first = c->rank < peer;
  x[1].reduce = first;
  x[1].src = first ? cur : NULL;
  dc_status st = c->run(c, x, 2);
  if (st == DC_OK && !first) /* nxt = theirs op ours */
    dc_reduce(nxt, cur, c->total_bytes / dc_dtype_size(c->dtype), c->dtype,
              c->op);
  return st;
}

/* Ranks 2i + 1 < 2 * extra hand their operand to 2i (a ring neighbour:
 * a rank that runs the ring instead, another size, meets a frame it does
 * not expect at once); the others are the p virtual ranks of the hypercube:
 * 2i below 2 * extra, then the rest in order. */
static int real_rank(int v, int extra) { return v < extra ? 2 * v : v + extra; }

static dc_status rounds(dc_comm *c, const void *send, void *recv) {
  int r = c->rank, p = pow2_floor(c->size), extra = c->size - p;
  size_t len = c->total_bytes;
  if (r < 2 * extra && r % 2)
    return hand_over(c, r - 1, send, recv);
  int v = r < 2 * extra ? r / 2 : r - extra, folds = r < 2 * extra;
  _Alignas(64) char small[1024]; /* latency path: no malloc for tiny ops */
  char *scratch = len <= sizeof small ? small : malloc(len ? len : 1);
  if (!scratch)
    return DC_ERR_NOMEM;
  /* Results alternate between recv and scratch; out of place the first
   * goes where the last then lands in recv. */
  int steps = log2_of(p) + folds;
  const char *cur = send;
  char *out = recv;
  dc_status st = DC_OK;
  for (int s = 0; st == DC_OK && s < steps; s++) {
    int k = s - folds; /* the hypercube's dimension, -1: the fold */
    int peer = k < 0 ? r + 1 : real_rank(v ^ (1 << k), extra);
    char *nxt = cur == scratch                       ? out
                : cur == out || (steps - s) % 2 == 0 ? scratch
                                                     : out;
    if (k < 0) { /* the handing rank's operand only comes in */
      dc_xfer x = dc_xrecv(peer, 0, nxt, len);
      x.reduce = 1;
      x.src = cur;
      st = one(c, x);
    } else {
      st = step(c, peer, cur, nxt);
    }
    cur = nxt;
  }
  if (st == DC_OK && cur != out && len)
    memcpy(out, cur, len);
  if (st == DC_OK && folds)
    st = one(c, dc_xsend(r + 1, 0, out, len));
  if (scratch != small)
    free(scratch);
  return st;
}

dc_status dc_doubling_all_reduce(dc_comm *c, const void *send, void *recv) {
  c->aux = DC_AUX_DOUBLING;
  return rounds(c, send, recv);
}

/* The all_reduce's pattern with no bytes: every rank hears, through the
 * hypercube, from every other before it leaves. The same pattern as a
 * small all_sum, so a rank in one while the others are in the other fails
 * at its first exchange with a mismatch (a pattern of its own could leave
 * both waiting until the timeout). */
dc_status dc_doubling_barrier(dc_comm *c) {
  static char none;
  size_t bytes = c->total_bytes;
  c->total_bytes = 0;
  dc_status st = rounds(c, &none, &none); /* aux: the caller's */
  c->total_bytes = bytes;
  return st;
}
