/* The ring backend: MLX's ring over TCP (MLX_RANK, MLX_HOSTFILE), with every
 * pair of ranks connected (k lanes each) so that send/recv works between any
 * two ranks and split groups get connections of their own. */
#ifndef DC_BACKENDS_RING_H
#define DC_BACKENDS_RING_H

#include <stdint.h>

#include "core/group.h"
#include "config/hostfile.h"
#include "transport/engine.h"

typedef struct ring_impl {
  dc_tcp *tcp;
  int naddrs;    /* addresses per rank in the hostfile */
  int sockets;   /* connections per address (DISTCOMM_SOCKETS) */
  uint64_t job;
  dc_addr *self; /* this rank's naddrs addresses (split binds the same IPs);
                    per_peer: size * naddrs, its address towards each rank */
  int neighbours; /* only ranks +-1 are connected (ring_plan.neighbours) */
  int per_peer;   /* the mesh backend: an address per pair (ring_plan) */
} ring_impl;

/* Who is where, for connecting a group's full mesh. Each pair of ranks has
 * naddrs * sockets connections ("lanes"); lane i uses address i % naddrs. */
typedef struct ring_plan {
  int rank, size, naddrs, sockets;
  const dc_addr *addrs; /* size * naddrs listening addresses */
  int *listen_fds;      /* this rank's naddrs listeners, already listening */
  uint64_t job, group;
  uint64_t host;        /* dc_host_key(): peers with the same share memory */
  /* Connect ring neighbours only, as MLX does: rank r accepts its left
   * neighbour on its own addresses and connects to its right neighbour's,
   * so a ring of direct cables works (DISTCOMM_RING_NEIGHBOURS=1). */
  int neighbours;
  /* The mesh backend (backends/mesh): every pair has links of its own, so a
   * rank has an address per peer. addrs then holds size * size * naddrs
   * entries: [(q * size + p) * naddrs + k] is rank q's address on its link
   * k to rank p. This rank listens on nlisten addresses (listen_fds), and
   * listener[q * naddrs + k] says on which one rank q's link k arrives. */
  int per_peer, nlisten;
  const int *listener;
} ring_plan;

static inline int ring_lanes(const ring_plan *p) {
  return p->naddrs * p->sockets;
}
/* The address of rank q that this rank dials (or is dialed from) on lane. */
static inline const dc_addr *ring_addr(const ring_plan *p, int q, int lane) {
  int k = lane % p->naddrs;
  if (p->per_peer)
    return &p->addrs[((size_t)q * (size_t)p->size + (size_t)p->rank) *
                         (size_t)p->naddrs + (size_t)k];
  return &p->addrs[q * p->naddrs + k];
}
/* Which of this rank's listeners rank q's lane must arrive on. */
static inline int ring_listener(const ring_plan *p, int q, int lane) {
  int k = lane % p->naddrs;
  return p->per_peer ? p->listener[q * p->naddrs + k] : k;
}
static inline int ring_nlisten(const ring_plan *p) {
  return p->per_peer ? p->nlisten : p->naddrs;
}

static inline int ring_neighbours_only(const ring_plan *p) {
  return p->neighbours && p->size > 2;
}
/* Who dials whom. Full mesh: every rank dials the lower ones. Neighbours
 * only: rank r dials r+1 (mod size) and accepts r-1. */
static inline int ring_dials(const ring_plan *p, int q) {
  if (ring_neighbours_only(p))
    return q == (p->rank + 1) % p->size;
  return q < p->rank;
}
static inline int ring_accepts(const ring_plan *p, int q) {
  if (ring_neighbours_only(p))
    return q == (p->rank + p->size - 1) % p->size;
  return q > p->rank;
}

/* DISTCOMM_RING_NEIGHBOURS=1: connect ring neighbours only. */
int ring_neighbours_env(void);

/* Connections per address: DISTCOMM_SOCKETS, default 2. */
int ring_sockets(void);

/* Connect to lower ranks, accept higher ones, handshake each connection.
 * Fills t->conns. Errors go to g (dc_fail) or, for init, the caller. */
dc_status ring_connect(dc_group *g, dc_tcp *t, const ring_plan *p, char *err,
                       size_t errlen);

/* After connecting: same-host peers get shared-memory pipes (unless
 * DISTCOMM_SHM=0). A pair that cannot map them keeps TCP. */
dc_status ring_shm_setup(dc_group *g, dc_tcp *t, const ring_plan *p);

extern const dc_backend_ops dc_ring_ops;
extern const dc_backend_ops dc_mesh_ops; /* the same, named "mesh" */

/* Split swaps listening addresses as fixed slots of RING_ADDR_SLOT bytes.
 * Parse count slots from a peer; a slot without a NUL is refused. */
#define RING_ADDR_SLOT 64
dc_status ring_parse_slots(const char *texts, int count, dc_addr *addrs,
                           char *why, size_t whylen);



/* Without a job token, whether the connection fd may claim rank q: it
 * comes from one of q's addresses in the plan, from this host, or, with
 * ring neighbours only (a ring of cables, where the dialer's source is its
 * end of our link, not an address it listens on), from the subnet of our
 * end of that link. A stranger elsewhere cannot take a rank's place by guessing the job
 * id. With a token the proofs decide, so this is not asked. */
int ring_source_ok(const ring_plan *p, int q, int fd);

/* Listen once on each distinct address of mine[0..n) (ports 0); the port
 * the kernel picks is written into every copy of an address. fds[*nfds]
 * are the listeners, which[i] the one of mine[i]. On failure nothing is
 * left open. */
dc_status ring_listen_each(dc_addr *mine, int n, int *fds, int *nfds,
                           int *which, char *err, size_t errlen);

/* Create a connected ring group from a plan whose listeners are open.
 * self: this rank's naddrs addresses (per_peer: size * naddrs). On failure nothing is left behind and
 * err says why. */
dc_status ring_build(const ring_plan *p, const dc_addr *self, double timeout,
                     dc_group **out, char *err, size_t errlen);
#endif
