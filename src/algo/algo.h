/* Collective algorithms, written once against a small transport face.
 *
 * An algorithm is a sequence of batches. A batch is a list of transfers to
 * and from peers that the transport runs concurrently and returns when all
 * are done (or one failed). Transfers on the same (peer, lane) in the same
 * direction run in the order listed, so both ends must list them in the same
 * order. A receive may reduce into its buffer instead of overwriting it
 * (buf = buf op incoming), element by element as bytes arrive, so data is
 * reduced while it is still in cache and no full-size scratch is needed. */
#ifndef DC_ALGO_ALGO_H
#define DC_ALGO_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

typedef struct dc_xfer {
  int peer; /* group rank */
  int lane; /* which of the parallel connections to that peer */
  int is_send;
  int reduce; /* receive only: buf = buf op incoming */
  void *buf;
  size_t len; /* bytes */
  /* reduce only: when set, buf = src op incoming (src is this rank's own
   * contribution at the same offsets), so out of place needs no copy */
  const void *src;
} dc_xfer;

static inline dc_xfer dc_xsend(int peer, int lane, const void *buf,
                               size_t len) {
  return (dc_xfer){
      .peer = peer, .lane = lane, .is_send = 1, .buf = (void *)buf, .len = len};
}
static inline dc_xfer dc_xrecv(int peer, int lane, void *buf, size_t len) {
  return (dc_xfer){.peer = peer, .lane = lane, .buf = buf, .len = len};
}

typedef struct dc_comm dc_comm;
struct dc_comm {
  int rank, size, lanes;
  /* The op in progress: what frames carry and receivers check. */
  uint8_t opcode;
  dc_dtype dtype;
  dc_op op;
  uint64_t count;
  uint32_t aux;
  uint32_t seq;       /* collective number or per-pair counter */
  size_t total_bytes; /* the op's size, for "after X of Y" messages */
  /* Only the ring neighbours (rank +-1) are connected, as on a ring of
   * direct cables: every algorithm must stay on the ring. */
  int neighbours_only;
  /* Every pair has links of its own (the mesh backend over TCP): large
   * all_reduces go straight to each block's owner (algo/mesh.c). */
  int full_mesh;
  /* Small all_reduce and barrier exchange with every rank at once up to
   * this many ranks (and 64 KiB sent per rank); beyond, log2 rounds
   * (algo/doubling.c). */
  int direct_ranks;
  /* Run a batch to completion. */
  dc_status (*run)(dc_comm *c, dc_xfer *x, int n);
  /* Single copy, offered when every rank is on this host (the same on
   * every rank): copy len bytes at address src in peer's memory to dst.
   * The peer must keep them there until it hears from us again. pull_ok
   * says whether this rank can read every peer (set-up probed it); ranks
   * agree on using pull before they do (algo/pull.c). */
  dc_status (*pull)(dc_comm *c, int peer, void *dst, uint64_t src, size_t len);
  int pull_ok;
  /* The group's choice between single copy and the pipes (algo/tune.h),
   * kept by the backend across calls; NULL: always single copy. */
  struct dc_tune *tune;
  void *ctx;
};

/* aux of recursive doubling's frames: a rank that runs direct exchange
 * (another DISTCOMM_DIRECT_RANKS) fails with a mismatch, not a wrong sum. */
#define DC_AUX_DOUBLING 1u

/* Sizes above which the bandwidth-optimal ring beats direct exchange. */
#define DC_DIRECT_MAX_BYTES (64u * 1024u)

dc_status dc_algo_all_reduce(dc_comm *c, const void *send, void *recv);
dc_status dc_algo_all_gather(dc_comm *c, const void *send, void *recv);
dc_status dc_algo_reduce_scatter(dc_comm *c, const void *send, void *recv);
dc_status dc_algo_broadcast(dc_comm *c, void *buf, int root);
dc_status dc_algo_barrier(dc_comm *c);

/* Direct exchanges (algo/exchange.c), lengths and offsets in bytes. On a
 * neighbours-only ring of more than 3 ranks: DC_ERR_NOT_SUPPORTED on every
 * rank before any transfer. */
dc_status dc_algo_all_to_allv(dc_comm *c, const void *send, const size_t *soff,
                              const size_t *slen, void *recv,
                              const size_t *roff, const size_t *rlen);
dc_status dc_algo_gather(dc_comm *c, const void *send, void *recv, size_t len,
                         int root);
dc_status dc_algo_scatter(dc_comm *c, const void *send, void *recv, size_t len,
                          int root);

/* Ring (bandwidth-optimal, pipelined, both directions) and direct
 * (latency-optimal: everyone exchanges with everyone in one batch). */
dc_status dc_ring_all_reduce(dc_comm *c, const void *send, void *recv);
dc_status dc_ring_all_gather(dc_comm *c, void *recv);
dc_status dc_ring_reduce_scatter(dc_comm *c, const void *send, void *recv);
/* Root's data passed along the ring clockwise, chunk by chunk. */
dc_status dc_ring_broadcast(dc_comm *c, void *buf, int root);
/* Every rank hears, through its left neighbour, from every other rank. */
dc_status dc_ring_barrier(dc_comm *c);
/* Single copy (c->pull): every rank reads what it needs straight from
 * its peers' buffers; DC_ERR_NOT_SUPPORTED on every rank alike (after one
 * round of frames) when some rank's buffers overlap in a way it cannot
 * serve: the caller then runs another algorithm. */
dc_status dc_pull_all_reduce(dc_comm *c, const void *send, void *recv);
dc_status dc_pull_all_gather(dc_comm *c, const void *send, void *recv);
dc_status dc_pull_reduce_scatter(dc_comm *c, const void *send, void *recv);
dc_status dc_direct_all_reduce(dc_comm *c, const void *send, void *recv);
/* Bandwidth-optimal on a full mesh of links: reduce-scatter and all-gather
 * with each block straight to or from its owner, sums in rank order. */
dc_status dc_mesh_all_reduce(dc_comm *c, const void *send, void *recv);
dc_status dc_direct_all_gather(dc_comm *c, const void *send, void *recv);
dc_status dc_direct_reduce_scatter(dc_comm *c, const void *send, void *recv);
dc_status dc_direct_barrier(dc_comm *c);
/* Recursive doubling (algo/doubling.c), for groups larger than
 * direct_ranks: log2(size) rounds of one exchange each, so O(size log size)
 * messages per op instead of direct exchange's O(size^2). Every rank ends
 * with the same bits (partners reduce the same two operands). */
dc_status dc_doubling_all_reduce(dc_comm *c, const void *send, void *recv);
/* The same rounds with no bytes. */
dc_status dc_doubling_barrier(dc_comm *c);
/* One batch with every peer: send mine (len bytes) to each, receive peer
 * q's into theirs + q * len (this rank's slot is left as it is). */
dc_status dc_direct_round(dc_comm *c, const void *mine, void *theirs,
                          size_t len);

#endif
