/* The progress engine: runs a batch of transfers (algo.h) over each
 * connection's link (transport/link.h: a non-blocking socket, or
 * shared-memory pipes) with poll(), checking every frame header, reducing
 * received data as it arrives, and bounding every wait by the group's
 * timeout. One engine per group; used by one thread at a time. It knows
 * no dc_group: failures, the timeout and interrupts go through hooks.
 *
 * The face, for an owner (backends/native's ring_build): a dc_engine is one
 * group's connections and their engine.
 *   dc_engine_open   from a plan (transport/mesh.h): allocate and connect;
 *   dc_engine_begin  + comm.run (dc_engine_run): one op's batches of transfers;
 *   dc_engine_poison after a failure: abort frames to the peers, shut down;
 *   dc_engine_free   close every connection.
 * The rest of this header is for set-up (dial.c, accept.c, setup_shm.c)
 * and the links (link.h). */
#ifndef DC_TRANSPORT_ENGINE_H
#define DC_TRANSPORT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"
#include "transport/mesh.h" /* dc_engine_hooks */
#include "transport/xfer.h" /* dc_xfer, dc_comm */

typedef struct dc_conn {
  /* How its bytes move (transport/link.h): dc_link_sock, or dc_link_pipe
   * once set-up wires shared-memory pipes to a same-host peer. */
  const struct dc_link_ops *link;
  int fd; /* -1 when absent (self); a pipe link's control path */
  int peer, lane;
  char addr[64];         /* the peer's address, for messages */
  size_t tx_left;        /* socket: bytes of the outgoing frame not yet sent */
  uint64_t op_rx;        /* payload bytes received during the current op */
  uint32_t op_id;        /* the op op_rx counts (dc_engine.op_id) */
  unsigned char *window; /* scratch for reduce-on-receive */
  uint64_t host;         /* the peer's host key (from its hello) */
  int unix_sock;         /* fd is a Unix socket: a same-host peer */
  /* A pipe link's state (transport/link_shm.c): the bytes go through
   * shared-memory pipes; fd only watches the peer's life and carries abort
   * frames. */
  struct dc_pipe *tx, *rx;
  size_t tx_cap, rx_cap;      /* their sizes (dc_shm_seg's cap) */
  uint64_t tx_tail;           /* our copy of the consumer's tail of tx */
  uint64_t mb_sent, mb_taken; /* mailbox of tx: ours, our copy of theirs */
  uint64_t mb_got;            /* mailbox of rx: messages taken */
  int pid;                    /* same-host peer's process, for single copy */
  struct dc_seal *seal;       /* DISTCOMM_SECURE on a socket link: frames
                                 carry a MAC (transport/auth.h); else NULL */
} dc_conn;

typedef struct dc_engine {
  dc_engine_hooks hooks; /* to the owner (the group): fail, timeout, ... */
  int rank, size, lanes;
  dc_conn *conns;            /* conns[peer * lanes + lane] */
  uint32_t *p2p_tx, *p2p_rx; /* send/recv counters per peer */
  int spin;                  /* busy-poll briefly before sleeping in poll() */
  struct dc_shm_seg *segs;   /* shared memory mapped for this group */
  int nsegs;
  int one_host;    /* every rank of the group is on this host */
  int pull_ok;     /* every peer's memory is readable (single copy) */
  int pull_forced; /* DISTCOMM_CMA=1 on every rank: no measuring */
  int silent;      /* the peer the first "no progress" timeout named, or -1:
                      dc_group_shrink suspects it first */
  /* Counts dc_engine_begin calls: a conn's op_rx restarts at the op's
   * first batch that uses it (a loop over every conn per op cost 512
   * stores at 256 ranks) */
  uint32_t op_id;
} dc_engine;

/* Open a group's mesh: dc_engine_new with the plan's rank, size and lanes,
 * then connect it (dial.c; nothing to connect for one rank). *out is set
 * before connecting, so that an owner whose hooks.fail poisons the mesh
 * (the group: ring_poison reads *out) reaches the peers already connected;
 * on failure the mesh is freed, *out is NULL and err says why (empty when
 * the detail went through hooks.fail). "out of memory" gives DC_ERR_NOMEM. */
dc_status dc_engine_open(const dc_engine_hooks *h, const dc_engine_plan *p,
                         dc_engine **out, char *err, size_t errlen);
/* Allocate an engine for size ranks x lanes connections (all fd = -1). */
dc_engine *dc_engine_new(const dc_engine_hooks *h, int rank, int size,
                         int lanes);
/* Close every connection and free. */
void dc_engine_free(dc_engine *t);

/* To the owner, through the hooks: a failure (formatted; returns st), a
 * log line (when verbose), the timeout now. Set-up uses them too. */
dc_status dc_engine_fail(dc_engine *t, dc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void dc_engine_log(dc_engine *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
double dc_engine_timeout(const dc_engine *t);

/* Set-up fills the engine's connections through these, never through
 * the fields: the engine owns its conns, segments and tune. */
int dc_engine_connected(const dc_engine *t, int peer, int lane);
void dc_engine_attach(dc_engine *t, int peer, int lane, int fd, int unix_sock,
                      uint64_t host, const char *addr);
uint64_t dc_engine_peer_host(const dc_engine *t, int peer);
/* The connection's frame keys (DISTCOMM_SECURE), owned from now on; NULL
 * for none. Every frame on it then ends in a tag, checked before the op
 * returns. A connection later wired to pipes drops its seal: same-host
 * shared memory is not authenticated. */
void dc_engine_seal(dc_engine *t, int peer, int lane, struct dc_seal *seal);
/* n zeroed slots for shared-memory segments (unmapped by dc_engine_free);
 * NULL when out of memory. */
struct dc_shm_seg *dc_engine_new_segs(dc_engine *t, int n);
/* The connection's link becomes a pipe link (dc_link_pipe): its bytes go
 * through tx and rx (of tx_cap and rx_cap bytes) from now on, its socket
 * stays the control path. */
void dc_engine_wire_pipes(dc_engine *t, int peer, int lane, struct dc_pipe *tx,
                          size_t tx_cap, struct dc_pipe *rx, size_t rx_cap);
void dc_engine_set_pid(dc_engine *t, int peer, int pid);
/* Single copy: offered (pull) when one_host, used when pull_ok; forced
 * (set so on every rank) tells the owner's tuner to skip the choice
 * between single copy and pipes (algo/tune.h). */
void dc_engine_set_pull(dc_engine *t, int one_host, int pull_ok, int forced);

/* Prepare comm for one op: fills the frame fields and run = dc_engine_run. */
void dc_engine_begin(dc_engine *t, dc_comm *c, uint8_t opcode, size_t count,
                     dc_dtype dtype, dc_op op, uint32_t aux, uint32_t seq);

dc_status dc_engine_run(dc_comm *c, dc_xfer *x, int n);
/* dc_comm.pull: process_vm_readv from a same-host peer. */
dc_status dc_engine_pull(dc_comm *c, int peer, void *dst, uint64_t src,
                         size_t len);

/* After a failure: tell every peer (an ABORT frame when the stream is at a
 * frame boundary) and shut our side, so nobody keeps waiting on this rank. */
void dc_engine_poison(dc_engine *t, dc_status st, const char *why);

#endif
