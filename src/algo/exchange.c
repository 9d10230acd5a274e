/* all_to_all(v), gather, scatter: one batch of direct transfers on lane 0
 * (every rank talks to every rank, so not on a neighbours-only ring).
 * Zero-byte transfers still carry their frame header, so a rank that runs
 * another op, or expects another length, is caught as a mismatch. */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"

/* A rooted op's transfers do not link every pair of ranks: ranks that
 * disagree on the root could wait on each other until the timeout. So a
 * header first goes once round the ring (zero bytes to the right, from the
 * left): a disagreement anywhere shows between some pair of neighbours,
 * which fails at once with the mismatch and aborts the others. */
static dc_status agree(dc_comm *c) {
  static char none;
  dc_xfer x[2] = {dc_xsend((c->rank + 1) % c->size, 0, &none, 0),
                  dc_xrecv((c->rank - 1 + c->size) % c->size, 0, &none, 0)};
  return c->run(c, x, 2);
}

/* After agree(), so every rank refuses alike. */
static dc_status neighbours_refused(dc_comm *c) {
  dc_status st = agree(c);
  return st != DC_OK ? st : DC_ERR_NOT_SUPPORTED;
}

/* Run the batch in x (n transfers), freeing it when it was allocated. */
static dc_status run_batch(dc_comm *c, dc_xfer *x, int n, dc_xfer *local) {
  dc_status st = c->run(c, x, n);
  if (x != local)
    free(x);
  return st;
}

static dc_xfer *batch(dc_xfer *local, size_t room, size_t n) {
  return n <= room ? local : malloc(sizeof(dc_xfer) * n);
}

dc_status dc_algo_all_to_allv(dc_comm *c, const void *send, const size_t *soff,
                              const size_t *slen, void *recv,
                              const size_t *roff, const size_t *rlen) {
  if (c->neighbours_only && c->size > 3)
    return neighbours_refused(c);
  int me = c->rank, k = 0;
  if (slen[me])
    memmove((char *)recv + roff[me], (const char *)send + soff[me], slen[me]);
  dc_xfer local[64];
  dc_xfer *x = batch(local, 64, 2 * (size_t)(c->size - 1));
  if (!x)
    return DC_ERR_NOMEM;
  /* next rank first and round, so ranks do not all start on rank 0 */
  for (int i = 1; i < c->size; i++) {
    int to = (me + i) % c->size, from = (me - i + c->size) % c->size;
    x[k++] = dc_xsend(to, 0, (const char *)send + soff[to], slen[to]);
    x[k++] = dc_xrecv(from, 0, (char *)recv + roff[from], rlen[from]);
  }
  return run_batch(c, x, k, local);
}

dc_status dc_algo_gather(dc_comm *c, const void *send, void *recv, size_t len,
                         int root) {
  if (c->neighbours_only && c->size > 3)
    return neighbours_refused(c);
  dc_status st = agree(c);
  if (st != DC_OK)
    return st;
  if (c->rank != root) {
    dc_xfer x = dc_xsend(root, 0, send, len);
    return c->run(c, &x, 1);
  }
  if (len)
    memmove((char *)recv + (size_t)root * len, send, len);
  dc_xfer local[32];
  dc_xfer *x = batch(local, 32, (size_t)c->size);
  if (!x)
    return DC_ERR_NOMEM;
  int k = 0;
  for (int q = 0; q < c->size; q++)
    if (q != root)
      x[k++] = dc_xrecv(q, 0, (char *)recv + (size_t)q * len, len);
  return run_batch(c, x, k, local);
}

dc_status dc_algo_scatter(dc_comm *c, const void *send, void *recv, size_t len,
                          int root) {
  if (c->neighbours_only && c->size > 3)
    return neighbours_refused(c);
  dc_status st = agree(c);
  if (st != DC_OK)
    return st;
  if (c->rank != root) {
    dc_xfer x = dc_xrecv(root, 0, recv, len);
    return c->run(c, &x, 1);
  }
  dc_xfer local[32];
  dc_xfer *x = batch(local, 32, (size_t)c->size);
  if (!x)
    return DC_ERR_NOMEM;
  int k = 0;
  for (int q = 0; q < c->size; q++)
    if (q != root)
      x[k++] = dc_xsend(q, 0, (const char *)send + (size_t)q * len, len);
  st = run_batch(c, x, k, local);
  /* after the sends: recv may overlap send's other blocks */
  if (st == DC_OK && len)
    memmove(recv, (const char *)send + (size_t)root * len, len);
  return st;
}
