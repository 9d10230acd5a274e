/* Which algorithm for which size. Every rank decides from the same
 * (count, dtype, size), so all ranks pick the same one; only between
 * single copy and the pipes do they vote, from their timings (pull_or). */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/tune.h"
#include "base/clock.h"

/* Direct exchange needs every pair connected; with neighbours only (and
 * more than 2 ranks) everything goes round the ring. */
static int ring_only(const dc_comm *c) {
  return c->neighbours_only && c->size > 2;
}

/* Single copy between same-host processes (c->pull) above direct's sizes. */
static int pull(const dc_comm *c) { return c->pull && !ring_only(c); }

/* Direct exchange sends size - 1 copies of the buffer in one round;
 * recursive doubling sends log2(size) in as many rounds. On 2 cores with
 * 8 to 32 ranks direct won up to ~64 KiB of copies per rank, doubling
 * beyond (2-3x at 64 KiB) and at 256 ranks (bench/scale/many-ranks.md). */
#define DIRECT_EXCHANGE_BYTES (64u * 1024u)
static int direct_wins(const dc_comm *c, size_t bytes) {
  return c->size <= c->direct_ranks &&
         (size_t)(c->size - 1) * bytes <= DIRECT_EXCHANGE_BYTES;
}

typedef dc_status (*algo_fn)(dc_comm *c, const void *send, void *recv);

/* Single copy or the ring through the pipes, as the group's tuner says
 * (tune.h: most calls follow the shared schedule or the last agreement;
 * a decision's votes ride on pull's first round, and every rank must
 * agree). pull answers NOT_SUPPORTED, on every rank alike, when a rank
 * voted against it or its buffers overlap oddly; then the ring runs. */
static dc_status pull_or(dc_comm *c, dc_tune_kind kind, algo_fn by_pull,
                         algo_fn other, const void *send, void *recv) {
  if (!pull(c))
    return other(c, send, recv);
  /* no tuner: single copy always (the unit tests' groups; a real group
   * has one wherever it can pull, or set-up failed) */
  dc_tune_plan plan = DC_TUNE_GO_PULL;
  if (c->tune)
    plan = dc_tune_collective(c->tune, kind, c->total_bytes);
  double t0 = c->tune ? dc_now() : 0;
  dc_status st = DC_ERR_NOT_SUPPORTED;
  if (plan != DC_TUNE_GO_PIPES) {
    if (plan == DC_TUNE_VOTE_PIPES)
      c->pull_ok = 0;
    st = by_pull(c, send, recv);
  }
  int pulled = st != DC_ERR_NOT_SUPPORTED;
  if (!pulled)
    st = other(c, send, recv);
  if (st == DC_OK && c->tune) {
    if (plan == DC_TUNE_VOTE_PIPES || plan == DC_TUNE_VOTE_PULL)
      dc_tune_agreed(c->tune, kind, c->total_bytes, pulled);
    dc_tune_record(c->tune, kind, c->total_bytes, pulled, dc_now() - t0);
  }
  return st;
}

dc_status dc_algo_all_reduce(dc_comm *c, const void *send, void *recv) {
  if (ring_only(c))
    return dc_ring_all_reduce(c, send, recv);
  if (c->total_bytes <= DC_DIRECT_MAX_BYTES || c->count < (size_t)c->size)
    return direct_wins(c, c->total_bytes)
               ? dc_direct_all_reduce(c, send, recv)
               : dc_doubling_all_reduce(c, send, recv);
  if (c->full_mesh && !pull(c))
    return dc_mesh_all_reduce(c, send, recv);
  return pull_or(c, DC_TUNE_ALL_REDUCE, dc_pull_all_reduce, dc_ring_all_reduce,
                 send, recv);
}

static dc_status ring_all_gather(dc_comm *c, const void *send, void *recv) {
  char *mine = (char *)recv + (size_t)c->rank * c->total_bytes;
  memmove(mine, send, c->total_bytes);
  return dc_ring_all_gather(c, recv);
}

/* From this many bytes per rank, a direct all_gather may be single copy
 * too, as the tuner finds. Where a VM's two vCPUs sit on different dies,
 * every line written into a pipe crosses twice, and single copy, which
 * reads the sender's clean buffer once, wins: 128 and 256 KiB 1.8x. Where
 * they share a cache the pipes win by a little (0.9-1x with the tuner's
 * tries), and below 64 KiB a rank by more (32 KiB: 0.8x): the same VM
 * moves between the two from one second to the next (bench/peers/shm-tuning.md,
 * session 15). */
#define PULL_GATHER_MIN_BYTES (64u * 1024u)

dc_status dc_algo_all_gather(dc_comm *c, const void *send, void *recv) {
  if (!ring_only(c) &&
      c->total_bytes * (size_t)c->size <= 4 * DC_DIRECT_MAX_BYTES)
    return c->total_bytes >= PULL_GATHER_MIN_BYTES
               ? pull_or(c, DC_TUNE_ALL_GATHER, dc_pull_all_gather,
                         dc_direct_all_gather, send, recv)
               : dc_direct_all_gather(c, send, recv);
  return pull_or(c, DC_TUNE_ALL_GATHER, dc_pull_all_gather, ring_all_gather,
                 send, recv);
}

dc_status dc_algo_reduce_scatter(dc_comm *c, const void *send, void *recv) {
  if (!ring_only(c) && c->total_bytes * (size_t)c->size <= DC_DIRECT_MAX_BYTES)
    return dc_direct_reduce_scatter(c, send, recv);
  return pull_or(c, DC_TUNE_REDUCE_SCATTER, dc_pull_reduce_scatter,
                 dc_ring_reduce_scatter, send, recv);
}

/* The root sends to every rank directly (one batch). Then every rank
 * exchanges an empty frame carrying the broadcast's root with every other
 * rank, so ranks that disagree on the root fail here, on every rank, rather
 * than return with stale data. */
dc_status dc_algo_broadcast(dc_comm *c, void *buf, int root) {
  if (ring_only(c)) {
    dc_status st = dc_ring_broadcast(c, buf, root);
    return st == DC_OK ? dc_ring_barrier(c) : st;
  }
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
  /* direct whatever the size: the root's frame then reaches every rank, so
   * any two that disagree on it meet (a barrier by doubling let most such
   * runs wait out the timeout) */
  return st == DC_OK ? dc_direct_barrier(c) : st;
}

dc_status dc_algo_barrier(dc_comm *c) {
  if (ring_only(c))
    return dc_ring_barrier(c);
  if (direct_wins(c, 0))
    return dc_direct_barrier(c);
  c->aux = DC_AUX_DOUBLING;
  return dc_doubling_barrier(c);
}
