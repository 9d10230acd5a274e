/* Collective algorithms, written once against the transport's batch face
 * (transport/xfer.h: dc_xfer, dc_comm). */
#ifndef DC_ALGO_ALGO_H
#define DC_ALGO_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"
#include "transport/xfer.h" /* dc_xfer, dc_comm: the face */

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
