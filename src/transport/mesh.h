/* The mesh: how a group's ranks connect, apart from how they found each
 * other. A bootstrap policy (src/bootstrap: MLX_HOSTFILE, the coordinator,
 * MLX_IBV_DEVICES; backends/native/split.c for subgroups) finds out where
 * the peers listen and which pairs connect, writes that into a
 * dc_engine_plan, opens its listeners, and calls dc_engine_open. Everything
 * after the addresses is here, in src/transport: dialing (dial.c) and
 * accepting (accept.c) with strangers refused, the hello and job-token
 * handshake (handshake.h, auth.c), shared-memory pipes and single copy for
 * same-host peers (setup_shm.c), then the progress engine (engine.c) that
 * runs batches of transfers on the connections.
 *
 * Nothing here knows dc_group: failures, log lines, interrupts and the
 * timeout reach the owner through dc_engine_hooks (core/hooks.c makes them
 * for a group), which the engine (dc_engine) holds. */
#ifndef DC_TRANSPORT_MESH_H
#define DC_TRANSPORT_MESH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "config/hostfile.h" /* dc_addr */
#include "distcomm.h"

/* How the mesh reaches whoever owns it (a dc_group in the library). Every
 * function gets arg. fail formats the detail and returns st (dc_vfail);
 * interrupt is polled while waiting (non-zero abandons the wait with
 * DC_ERR_INTERRUPTED); timeout is read at every wait, so that
 * dc_set_timeout applies to a mesh already open; log may be NULL. */
typedef struct dc_engine_hooks {
  dc_status (*fail)(void *arg, dc_status st, const char *fmt, va_list ap);
  int (*interrupt)(void *arg);
  double (*timeout)(void *arg);
  void (*log)(void *arg, const char *fmt, va_list ap);
  void *arg;
} dc_engine_hooks;

/* Who is where. Each pair of ranks has naddrs * sockets connections
 * ("lanes"); lane i uses address i % naddrs. */
typedef struct dc_engine_plan {
  int rank, size, naddrs, sockets;
  const dc_addr
      *addrs;      /* size * naddrs listening addresses (per_peer: below) */
  int *listen_fds; /* this rank's listeners, already listening */
  /* NULL, or the Unix socket beside each listener (dc_sock_listen_twin),
   * alike on every rank: same-host pairs connect there (dc_plan_local). */
  const int *twin_fds;
  uint64_t job, group; /* both ends of every connection must agree */
  uint64_t host;       /* dc_host_key(): peers with the same share memory */
  /* Connect ring neighbours only, as MLX does: rank r accepts its left
   * neighbour on its own addresses and connects to its right neighbour's,
   * so a ring of direct cables works (DISTCOMM_RING_NEIGHBOURS=1). */
  int neighbours;
  /* Every pair has links of its own (the mesh backend), so a rank has an
   * address per peer. addrs then holds size * size * naddrs entries:
   * [(q * size + p) * naddrs + k] is rank q's address on its link k to rank
   * p. This rank listens on nlisten addresses (listen_fds), and
   * listener[q * naddrs + k] says on which one rank q's link k arrives. */
  int per_peer, nlisten;
  const int *listener;
  /* NULL, or asked about every 0.1 s while set-up waits to connect or be
   * connected: non-zero (why says what) ends it with DC_ERR_PEER_LOST.
   * dc_group_shrink's: a member's agreement socket closed (it is dead). */
  int (*abandon)(void *arg, char *why, size_t whylen);
  void *abandon_arg;
} dc_engine_plan;

static inline int dc_plan_lanes(const dc_engine_plan *p) {
  return p->naddrs * p->sockets;
}
/* The address of rank q that this rank dials (or is dialed from) on lane. */
static inline const dc_addr *dc_plan_addr(const dc_engine_plan *p, int q,
                                          int lane) {
  int k = lane % p->naddrs;
  if (p->per_peer)
    return &p->addrs[((size_t)q * (size_t)p->size + (size_t)p->rank) *
                         (size_t)p->naddrs +
                     (size_t)k];
  return &p->addrs[q * p->naddrs + k];
}
/* Which of this rank's listeners rank q's lane must arrive on. */
static inline int dc_plan_listener(const dc_engine_plan *p, int q, int lane) {
  int k = lane % p->naddrs;
  return p->per_peer ? p->listener[q * p->naddrs + k] : k;
}
static inline int dc_plan_nlisten(const dc_engine_plan *p) {
  return p->per_peer ? p->nlisten : p->naddrs;
}
static inline int dc_plan_neighbours_only(const dc_engine_plan *p) {
  return p->neighbours && p->size > 2;
}
/* Who dials whom. Full mesh: every rank dials the lower ones. Neighbours
 * only: rank r dials r+1 (mod size) and accepts r-1. */
static inline int dc_plan_dials(const dc_engine_plan *p, int q) {
  if (dc_plan_neighbours_only(p))
    return q == (p->rank + 1) % p->size;
  return q < p->rank;
}
static inline int dc_plan_accepts(const dc_engine_plan *p, int q) {
  if (dc_plan_neighbours_only(p))
    return q == (p->rank + p->size - 1) % p->size;
  return q > p->rank;
}

/* Whether this rank and rank q listen on the same IP for lane: the same
 * host and network namespace, so with twin_fds the pair may connect over
 * the Unix socket beside q's TCP listener: the dialer dials it unless
 * DISTCOMM_SHM=0 keeps its same-host pairs on TCP. Not with per-pair
 * addresses (the mesh backend's links are the point there). */
int dc_plan_local(const dc_engine_plan *p, int q, int lane);

/* Without a job token (protected mode), whether the connection fd may
 * claim rank q: the kernel says its other end is a process of this user on
 * this host (SO_PEERCRED, or NETLINK_SOCK_DIAG for TCP); anyone with
 * DISTCOMM_INSECURE=1. With a token the proofs decide (source.c). */
int dc_plan_source_ok(const dc_engine_plan *p, int q, int fd);

/* Whether every address in the plan is one of this host's (source.c). */
int dc_plan_one_host(const dc_engine_plan *p);

/* Protected mode: a job without a token (token 0) whose plan spans hosts
 * fails (DC_ERR_CONFIG, err says how to give one or opt out) unless
 * DISTCOMM_INSECURE=1, which rank 0 then states once on stderr. */
dc_status dc_plan_protected(const dc_engine_plan *p, int token, char *err,
                            size_t errlen);
/* How to give a job a token, or opt out: one sentence for errors. */
const char *dc_how_to_token(void);

#endif
