/* The mesh: this rank's connections to the other ranks of one group, and the
 * engine that runs batches of transfers (algo/algo.h) over them.
 *
 * A bootstrap policy (backends/ring: the hostfile; backends/mpi; next, a
 * coordinator) only finds out where the peers are and which pairs connect;
 * it writes that into a dc_mesh_plan and opens a mesh. Everything after the
 * addresses is the mesh's: dialing and accepting, the hello and job-token
 * handshake, shared-memory pipes and single copy for same-host peers, the
 * progress engine, abort frames. The mesh does not know dc_group: it reports
 * failures, interrupts and its timeout through dc_mesh_hooks, so core/ stays
 * above it and tests can drive it without a group.
 *
 * Design of issue 14; see src/transport/README.md for the state of the move
 * (today the ring backend still fills dc_tcp, engine.h, directly). */
#ifndef DC_TRANSPORT_MESH_H
#define DC_TRANSPORT_MESH_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/algo.h"
#include "config/hostfile.h" /* dc_addr */
#include "distcomm.h"

typedef struct dc_mesh dc_mesh; /* opaque: owns its connections and links */

/* How the mesh reaches whoever owns it (a dc_group in the library). Every
 * function gets arg. fail formats the detail and returns st (dc_vfail);
 * interrupt is polled while waiting (non-zero abandons the wait with
 * DC_ERR_INTERRUPTED); timeout is read at every wait, so that
 * dc_set_timeout applies to a mesh already open; log may be NULL. */
typedef struct dc_mesh_hooks {
  dc_status (*fail)(void *arg, dc_status st, const char *fmt, va_list ap);
  int (*interrupt)(void *arg);
  double (*timeout)(void *arg);
  void (*log)(void *arg, const char *fmt, va_list ap);
  void *arg;
} dc_mesh_hooks;

/* Which side of a pair opens the connection. Dialing must be acyclic (a
 * full mesh: every rank dials the lower ranks), see accept_first. */
enum { DC_PAIR_NONE = 0, DC_PAIR_DIAL = 1, DC_PAIR_ACCEPT = 2 };

/* What a bootstrap hands the mesh. All pointers are read during
 * dc_mesh_open only; the mesh copies what it keeps. */
typedef struct dc_mesh_plan {
  int rank, size;
  int naddrs;            /* listening addresses per rank */
  int sockets;           /* connections per address: lanes = naddrs*sockets */
  const dc_addr *addrs;  /* size * naddrs; lane l of rank q uses
                            addrs[q * naddrs + l % naddrs] */
  const int *listen_fds; /* this rank's naddrs listeners, already listening */
  const uint8_t *pair;   /* size entries: DC_PAIR_* for each peer */
  int accept_first;      /* accept before dialing (a ring of cables) */
  uint64_t job, group;   /* both ends of every connection must agree */
  double timeout_s;      /* bound on the whole set-up */
  /* Appended to "could not connect to rank q" when non-NULL for q: what
   * the policy knows about why a peer may be unreachable. */
  const char *(*dial_hint)(const struct dc_mesh_plan *p, int q);
  /* The job token is read from the environment (transport/auth.h): every
   * group proves it, split groups included. Same-host peers get pipes
   * unless DISTCOMM_SHM=0, and single copy when every peer is readable. */
} dc_mesh_plan;

/* Connect, handshake and set up the links of every pair the plan names.
 * On failure nothing is left open and err says why, in the words the ring
 * has always used ("rank 1 could not connect to rank 0 (...)"). */
dc_status dc_mesh_open(const dc_mesh_plan *p, const dc_mesh_hooks *h,
                       dc_mesh **out, char *err, size_t errlen);

/* Prepare c for one op (frame fields, run, pull); then c->run(c, x, n)
 * runs batches on the mesh. Failures go through hooks.fail. */
void dc_mesh_begin(dc_mesh *m, dc_comm *c, uint8_t opcode, size_t count,
                   dc_dtype dtype, dc_op op, uint32_t aux, uint32_t seq);

/* The next per-pair sequence number of a send (or receive) with peer. */
uint32_t dc_mesh_next_seq(dc_mesh *m, int peer, int is_send);
int dc_mesh_lanes(const dc_mesh *m);

/* After a failure: an abort frame (status st, text why) to every peer and
 * our side shut, so nobody waits on this rank. Bounded; does not free. */
void dc_mesh_poison(dc_mesh *m, dc_status st, const char *why);

/* Close every connection, unmap shared memory, free. NULL is fine. */
void dc_mesh_close(dc_mesh *m);

#endif
