/* The ring backend: MLX's ring over TCP (MLX_RANK, MLX_HOSTFILE), with every
 * pair of ranks connected (k lanes each) so that send/recv works between any
 * two ranks and split groups get connections of their own. */
#ifndef DC_BACKENDS_RING_H
#define DC_BACKENDS_RING_H

#include <stdint.h>

#include "core/group.h"
#include "core/hostfile.h"
#include "transport/engine.h"

typedef struct ring_impl {
  dc_tcp *tcp;
  int naddrs;    /* addresses per rank in the hostfile */
  int sockets;   /* connections per address (DISTCOMM_SOCKETS) */
  uint64_t job;
  dc_addr *self; /* this rank's naddrs addresses (split binds the same IPs) */
} ring_impl;

/* Who is where, for connecting a group's full mesh. Each pair of ranks has
 * naddrs * sockets connections ("lanes"); lane i uses address i % naddrs. */
typedef struct ring_plan {
  int rank, size, naddrs, sockets;
  const dc_addr *addrs; /* size * naddrs listening addresses */
  int *listen_fds;      /* this rank's naddrs listeners, already listening */
  uint64_t job, group;
  uint64_t host;        /* dc_host_key(): peers with the same share memory */
} ring_plan;

static inline int ring_lanes(const ring_plan *p) {
  return p->naddrs * p->sockets;
}
static inline const dc_addr *ring_addr(const ring_plan *p, int q, int lane) {
  return &p->addrs[q * p->naddrs + lane % p->naddrs];
}

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



/* Create a connected ring group from a plan whose listeners are open.
 * self: this rank's naddrs addresses. On failure nothing is left behind and
 * err says why. */
dc_status ring_build(const ring_plan *p, const dc_addr *self, double timeout,
                     dc_group **out, char *err, size_t errlen);
#endif
