/* The batch face: what the transport offers the algorithms above it.
 *
 * An algorithm is a sequence of batches. A batch is a list of transfers to
 * and from peers that the transport runs concurrently and returns when all
 * are done (or one failed). Transfers on the same (peer, lane) in the same
 * direction run in the order listed, so both ends must list them in the same
 * order. A receive may reduce into its buffer instead of overwriting it
 * (buf = buf op incoming), element by element as bytes arrive, so data is
 * reduced while it is still in cache and no full-size scratch is needed. */
#ifndef DC_TRANSPORT_XFER_H
#define DC_TRANSPORT_XFER_H

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
  /* The group's choice between single copy and the pipes: the algorithms'
   * tuner (algo/tune.h), which the backend keeps across calls and sets
   * after begin; the transport never reads it. NULL: always single copy. */
  struct dc_tune *tune;
  void *ctx;
};

#endif
