/* Which algorithm for which size. Every rank decides from the same
 * (count, dtype, size), so all ranks pick the same one. */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "core/group.h"

dc_status dc_algo_all_reduce(dc_comm *c, const void *send, void *recv) {
  if (c->total_bytes <= DC_DIRECT_MAX_BYTES || c->count < (size_t)c->size)
    return dc_direct_all_reduce(c, send, recv);
  return dc_ring_all_reduce(c, send, recv);
}

dc_status dc_algo_all_gather(dc_comm *c, const void *send, void *recv) {
  if (c->total_bytes * (size_t)c->size <= 4 * DC_DIRECT_MAX_BYTES)
    return dc_direct_all_gather(c, send, recv);
  char *mine = (char *)recv + (size_t)c->rank * c->total_bytes;
  memmove(mine, send, c->total_bytes);
  return dc_ring_all_gather(c, recv);
}

dc_status dc_algo_reduce_scatter(dc_comm *c, const void *send, void *recv) {
  if (c->total_bytes * (size_t)c->size <= DC_DIRECT_MAX_BYTES)
    return dc_direct_reduce_scatter(c, send, recv);
  return dc_ring_reduce_scatter(c, send, recv);
}

/* The root sends to every rank directly (one batch). Then every rank
 * exchanges an empty frame carrying the broadcast's root with every other
 * rank, so ranks that disagree on the root fail here, on every rank, rather
 * than return with stale data. */
dc_status dc_algo_broadcast(dc_comm *c, void *buf, int root) {
  dc_xfer local[64];
  int n = c->rank == root ? c->size - 1 : 1;
  dc_xfer *x = n <= 64 ? local : malloc(sizeof *x * (size_t)n);
  if (!x)
    return DC_ERR_NOMEM;
  int k = 0;
  for (int i = 1; c->rank == root && i < c->size; i++)
    x[k++] = dc_xsend((root + i) % c->size, 0, buf, c->total_bytes);
  if (c->rank != root)
    x[k++] = dc_xrecv(root, 0, buf, c->total_bytes);
  dc_status st = c->run(c, x, k);
  if (x != local)
    free(x);
  return st == DC_OK ? dc_algo_barrier(c) : st;
}
