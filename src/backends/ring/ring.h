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
  dc_addr *self; /* this rank's naddrs addresses (split binds the same IPs) */
  int neighbours; /* only ranks +-1 are connected (ring_plan.neighbours) */
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
} ring_plan;

static inline int ring_lanes(const ring_plan *p) {
  return p->naddrs * p->sockets;
}
static inline const dc_addr *ring_addr(const ring_plan *p, int q, int lane) {
  return &p->addrs[q * p->naddrs + lane % p->naddrs];
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

/* Split swaps listening addresses as fixed slots of RING_ADDR_SLOT bytes.
 * Parse count slots from a peer; a slot without a NUL is refused. */
#define RING_ADDR_SLOT 64
dc_status ring_parse_slots(const char *texts, int count, dc_addr *addrs,
                           char *why, size_t whylen);



/* Create a connected ring group from a plan whose listeners are open.
 * self: this rank's naddrs addresses. On failure nothing is left behind and
 * err says why. */
dc_status ring_build(const ring_plan *p, const dc_addr *self, double timeout,
                     dc_group **out, char *err, size_t errlen);
#endif
