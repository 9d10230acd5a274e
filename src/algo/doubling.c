/* Small ops for large groups: log2(size) rounds of one exchange each.
 *
 * Direct exchange (direct.c) is one batch in which every rank sends to and
 * hears from every other: the fewest round trips, but size - 1 frames per
 * rank, and a wait that looks at every one of them. At 256 ranks on one
 * host that is 65280 frames for a 10-float all_sum (bench/many-ranks.md);
 * here it is 8 rounds of one frame each way per rank.
 *
 * all_reduce is recursive doubling over the largest power of two p of
 * ranks; each of the size - p others first hands its operand to rank - p
 * and at the end gets the result back from it. Partners reduce the same
 * two operands, and dc_reduce gives the same bits whichever is first, so
 * every rank ends with the same bits (but not the rank-order sum of
 * direct exchange: the tree is ((x0 x1) (x2 x3)) ...). */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"

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
 * cur into nxt (never into cur, which may still be on its way). */
static dc_status step(dc_comm *c, int peer, const void *cur, void *nxt) {
  dc_xfer x[2] = {dc_xsend(peer, 0, cur, c->total_bytes),
                  dc_xrecv(peer, 0, nxt, c->total_bytes)};
  x[1].reduce = 1;
  x[1].src = cur;
  return c->run(c, x, 2);
}

dc_status dc_doubling_all_reduce(dc_comm *c, const void *send, void *recv) {
  int r = c->rank, p = pow2_floor(c->size), extra = c->size - p;
  size_t len = c->total_bytes;
  c->aux = DC_AUX_DOUBLING;
  if (r >= p)
    return hand_over(c, r - p, send, recv);
  _Alignas(64) char small[1024]; /* latency path: no malloc for tiny ops */
  char *scratch = len <= sizeof small ? small : malloc(len ? len : 1);
  if (!scratch)
    return DC_ERR_NOMEM;
  /* Results alternate between recv and scratch; out of place the first
   * goes where the last then lands in recv. */
  int steps = log2_of(p) + (r < extra);
  const char *cur = send;
  char *out = recv;
  dc_status st = DC_OK;
  for (int s = 0; st == DC_OK && s < steps; s++) {
    int peer = r < extra ? (s == 0 ? r + p : r ^ (1 << (s - 1))) : r ^ (1 << s);
    char *nxt = cur == scratch                       ? out
                : cur == out || (steps - s) % 2 == 0 ? scratch
                                                     : out;
    if (r < extra && s == 0) { /* the extra rank's operand only comes in */
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
  if (st == DC_OK && r < extra)
    st = one(c, dc_xsend(r + p, 0, out, len));
  if (scratch != small)
    free(scratch);
  return st;
}

dc_status dc_doubling_barrier(dc_comm *c) {
  static char none;
  dc_status st = DC_OK;
  for (int d = 1; st == DC_OK && d < c->size; d *= 2) {
    dc_xfer x[2] = {dc_xsend((c->rank + d) % c->size, 0, &none, 0),
                    dc_xrecv((c->rank - d + c->size) % c->size, 0, &none, 0)};
    st = c->run(c, x, 2);
  }
  return st;
}
