/* Links: how the bytes of one connection move. Chosen per connection when
 * the mesh is set up (a socket; a shared-memory pipe for a same-host peer),
 * so that the engine's loop calls through the table and never asks which
 * kind it has. Every link keeps a socket to its peer: it is the data path
 * of a socket link and the control path (life, abort frames) of a pipe.
 *
 * Design of issue 14 (see src/transport/README.md); engine.c still has the
 * two kinds inline today. Single copy (process_vm_readv) is not a link: it
 * is dc_comm.pull, offered by the mesh when every peer is readable. */
#ifndef DC_TRANSPORT_LINK_H
#define DC_TRANSPORT_LINK_H

#include <stddef.h>
#include <sys/types.h>

typedef struct dc_conn dc_conn;   /* transport/engine.h */
typedef struct dc_xstep dc_xstep; /* one transfer in progress on a conn */

/* Every step returns bytes moved (0: would block), -errno on an error, -1
 * when the peer closed. A step that finds a frame header that differs from
 * the expected one stops and lets the engine decode it (abort, mismatch). */
typedef struct dc_link_ops {
  const char *name; /* "socket", "shm pipe": for logs */
  /* One step of sending the frame of s (header then payload). */
  ssize_t (*send)(dc_conn *k, dc_xstep *s);
  /* One step of receiving into s (copying or reducing as s says). */
  ssize_t (*recv)(dc_conn *k, dc_xstep *s);
  /* Whether recv compares whole headers by bytes (encode the expected one
   * at set-up of the batch). */
  int (*wants_header)(const dc_conn *k, size_t len, int reduce);
  /* poll() events to wait for on the conn's socket; a link without a
   * file descriptor of its data returns POLLIN|POLLRDHUP and sets
   * *sleeps: the engine then sleeps with a bounded backoff instead. */
  short (*events)(const dc_conn *k, int is_send, int *sleeps);
  /* Nothing moved: a frame that can only come from a peer running
   * another op (copied into hdr, 1) or nothing to say (0). May be NULL. */
  int (*crossed)(dc_conn *k, const dc_xstep *s, unsigned char *hdr);
  /* Before an abort frame: bring the socket to a frame boundary by the
   * deadline (a socket pads its half-written frame; a pipe's socket is
   * idle). Returns 1 when the abort frame may be written. */
  int (*to_boundary)(dc_conn *k, double deadline);
  /* Free what the link holds on the conn (pipes live in the mesh's
   * segments; the socket is closed by the mesh). May be NULL. */
  void (*drop)(dc_conn *k);
} dc_link_ops;

extern const dc_link_ops dc_link_sock; /* transport/link_sock.c */
extern const dc_link_ops dc_link_pipe; /* transport/link_shm.c */

#endif
