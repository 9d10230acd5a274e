/* The native backend, what dc_init's "ring" and "mesh" give: every pair of
 * ranks connected over the transport (k lanes each) so that send/recv
 * works between any two ranks and split groups get connections of their
 * own. Its files: the ops table (ops.c, dc_ring_ops and dc_mesh_ops), the
 * group from a plan (build.c, ring_build), split (split.c), the hookup of
 * the hierarchical all_reduce (hier.c, over compose/hier.h) and send/recv
 * by single copy between processes of one host (p2p.c). The ways peers
 * are found (MLX_HOSTFILE, a coordinator, MLX_IBV_DEVICES) live in
 * src/bootstrap and call ring_build. */
#ifndef DC_BACKENDS_NATIVE_H
#define DC_BACKENDS_NATIVE_H

#include <stdint.h>

#include "core/group.h"
#include "config/hostfile.h"
#include "transport/engine.h"
#include "transport/mesh.h"

typedef struct ring_impl {
  dc_engine *tcp;
  int naddrs;  /* addresses per rank in the hostfile */
  int sockets; /* connections per address (DISTCOMM_SOCKETS) */
  uint64_t job;
  dc_addr *self;  /* this rank's naddrs addresses (split binds the same IPs);
                     per_peer: size * naddrs, its address towards each rank */
  int neighbours; /* only ranks +-1 are connected (dc_engine_plan.neighbours) */
  int per_peer;   /* the mesh backend: an address per pair (dc_engine_plan) */
  int direct_ranks;       /* DISTCOMM_DIRECT_RANKS (dc_comm.direct_ranks) */
  uint64_t host;          /* this rank's host key (dc_engine_plan.host) */
  struct ring_hier *hier; /* hierarchical all_reduce (hier.c), or NULL
                             until the first all_reduce */
  /* DISTCOMM_HIER and DISTCOMM_HIER_BYTES, read at the group's first
   * all_reduce (hier.c): a getenv per call cost more than a small op's own
   * work over shared memory */
  int hier_read, hier_mode;
  size_t hier_bytes;
  struct dc_tune *tune; /* single copy or pipes (algo/tune.h), when every
                           rank is on this host; set on every dc_comm */
  /* Kept for dc_group_shrink (shrink.c): this rank's listeners, open for
   * the group's life, and the address where each rank is dialed (its
   * first; the mesh: its first towards this rank), size entries; NULL
   * where the group cannot shrink (no memory when it was made). */
  int *kept_fds, nkept;
  dc_addr *world;
} ring_impl;

/* Hand the listeners fds[0..n) to g for dc_group_shrink with every rank's
 * addresses (naddrs per rank; the first is dialed); on no memory they are
 * closed and g cannot shrink. */
void ring_keep_listeners(dc_group *g, int *fds, int n, const dc_addr *addrs,
                         int naddrs);

/* dc_group_shrink on the native backend (shrink.c). */
dc_status ring_shrink(dc_group *g, dc_group **out, char *err, size_t errlen);

/* For tests only (tests/mp/shrink_test.c, which links the static library):
 * called on every member at two points of each set-up of the survivors'
 * group, "connect" (addresses swapped, not connected yet) and "confirm"
 * (connected, not confirmed yet), so that a test can kill a rank exactly
 * there. NULL otherwise. */
extern void (*dc_shrink_test_hook)(const char *point);

/* DISTCOMM_RING_NEIGHBOURS=1: connect ring neighbours only. */
int ring_neighbours_env(void);

/* Connections per address: DISTCOMM_SOCKETS; unset, 2, but 1 when more
 * than 16 ranks all listen on one IP address (addrs: size x naddrs; NULL
 * for per-pair addresses). Every rank computes it from the same plan. */
int ring_sockets(const dc_addr *addrs, int size, int naddrs);

/* Point to point by single copy (p2p.c): whether a message whose
 * largest lane piece is piece_bytes goes that way (the same on both ends),
 * then the two ends. *pulled = 0: the sender could not offer it, and the
 * message follows through the lanes as usual. */
int ring_p2p_single_copy(const dc_comm *c, size_t piece_bytes);
dc_status ring_p2p_send_pulled(dc_engine *t, dc_comm *c, const void *buf,
                               size_t bytes, int peer, int *pulled);
dc_status ring_p2p_recv_pulled(dc_engine *t, dc_comm *c, void *buf,
                               size_t bytes, int peer, int *pulled);

/* hier.c: whether this all_reduce goes hierarchical (the same answer
 * on every rank), and then runs it; poison and free the subgroups. */
int ring_hier_takes(dc_group *g, size_t count, dc_dtype dtype);
dc_status ring_hier_all_reduce(dc_group *g, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op);
void ring_hier_poison(dc_group *g);
void ring_hier_free(struct ring_hier *H);

extern const dc_backend_ops dc_ring_ops;
extern const dc_backend_ops dc_mesh_ops; /* the same, named "mesh" */

/* Split swaps listening addresses as fixed slots of RING_ADDR_SLOT bytes.
 * Parse count slots from a peer; a slot without a NUL is refused. */
#define RING_ADDR_SLOT 64
dc_status ring_parse_slots(const char *texts, int count, dc_addr *addrs,
                           char *why, size_t whylen);

/* Listen once on each distinct address of mine[0..n) (ports 0); the port
 * the kernel picks is written into every copy of an address. fds[*nfds]
 * are the listeners, which[i] the one of mine[i]. On failure nothing is
 * left open. */
dc_status ring_listen_each(dc_addr *mine, int n, int *fds, int *nfds,
                           int *which, char *err, size_t errlen);

/* Create a connected ring group from a plan whose listeners are open.
 * self: this rank's naddrs addresses (per_peer: size * naddrs). On failure
 * nothing is left behind and err says why. */
dc_status ring_build(const dc_engine_plan *p, const dc_addr *self,
                     double timeout, dc_group **out, char *err, size_t errlen);
#endif
