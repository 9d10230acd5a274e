/* Links: how the bytes of one connection move. Each connection has a link
 * op table, chosen when the mesh is set up: dc_link_sock for every
 * connection (dc_engine_new), dc_link_pipe once set-up gives a same-host peer
 * shared-memory pipes (dc_engine_wire_pipes). The engine's loop (engine.c)
 * calls through the table, one call per step of a transfer, and never asks
 * which kind it has. Every link keeps a socket to its peer: it is the data
 * path of a socket link and the control path (life, abort frames) of a
 * pipe. Abort frames, their reading, the header checks and the batch loop
 * are the engine's; a link moves bytes and says how to wait for them.
 *
 * Only socket links carry DISTCOMM_SECURE seals (a pipe drops its seal at
 * wiring). Single copy (process_vm_readv) is not a link: it is
 * dc_comm.pull, offered by the engine when every peer is readable.
 *
 * For the links only: the engine's face is engine.h. */
#ifndef DC_TRANSPORT_LINK_H
#define DC_TRANSPORT_LINK_H

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "kernels/reduce.h"
#include "transport/auth.h" /* DC_SEAL_TAG_BYTES */
#include "transport/engine.h"
#include "transport/frame.h"

#define DC_LINK_WINDOW (256u * 1024u) /* reduce-on-receive scratch: fits L2 */
/* A sealed frame's payload goes in records of at most this many bytes, each
 * with its own tag (the first one's covers the header too): a record is
 * received into the conn's window and its tag checked before a byte of it
 * reaches the user's buffer. A multiple of every element size. */
#define DC_SEAL_RECORD (64u * 1024u)
_Static_assert(DC_SEAL_RECORD <= DC_LINK_WINDOW, "a record fits the window");

/* One transfer of a batch in progress on its connection. */
typedef struct dc_xstep {
  dc_xfer *x;
  dc_conn *conn;
  int prev; /* earlier transfer on the same connection and direction */
  int finished;
  unsigned char hdr[DC_FRAME_BYTES]; /* to send, or expected (wants_header) */
  size_t hdr_done, done, in_window;
  /* DISTCOMM_SECURE: the payload goes in records of DC_SEAL_RECORD bytes,
   * each followed by its tag (tag_len 0 without); rec_end: where the record
   * being sent ends */
  size_t tag_len, tag_done, rec_end;
  int tagged, counted; /* sending: tag made, first byte out (counter used) */
  unsigned char tag[DC_SEAL_TAG_BYTES];
} dc_xstep;

/* Steps return bytes moved (0: would block), -errno on an error, -1 when
 * the peer closed; the engine turns those into "rank N lost". A step sets
 * s->finished when the transfer is done. A recv step that finds a frame
 * header other than the expected one lets dc_engine_check_header decode it
 * (abort, mismatch) and stops with *st set. */
/* A step's -errno for a peer that wrote a shared pipe's state out of
 * range (shm.h: DC_PIPE_BAD): the engine names the peer and fails. */
#define DC_LINK_EPIPE_STATE EPROTO

typedef struct dc_link_ops {
  const char *name; /* "socket", "shm pipe": for logs */
  /* One step of sending s's frame (s->hdr, payload, tag when sealed). */
  ssize_t (*send)(dc_xstep *s);
  /* One step of receiving into s (copying or reducing as s->x says). */
  ssize_t (*recv)(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st);
  /* Whether recv compares whole headers by bytes: the engine then encodes
   * the expected one into s->hdr when the batch is set up. */
  int (*wants_header)(size_t len, int reduce);
  /* poll() events to wait for on the conn's socket. A link whose data has
   * no file descriptor sets *sleeps: the engine then sleeps with a bounded
   * backoff, and the socket speaking means an abort frame or the end. */
  short (*events)(int is_send, int *sleeps);
  /* Nothing moved: a frame that can only come from a peer running another
   * op, copied into s->hdr (1), or nothing to say (0). May be NULL. */
  int (*crossed)(dc_xstep *s);
  /* Before an abort frame: bring the socket to a frame boundary by the
   * deadline (a socket pads its half-written frame; a pipe's socket is
   * idle). Returns 1 when the abort frame may be written. */
  int (*to_boundary)(dc_conn *k, double deadline);
} dc_link_ops;

extern const dc_link_ops dc_link_sock; /* transport/link_sock.c */
extern const dc_link_ops dc_link_pipe; /* transport/link_shm.c */

/* ---- what the engine lends its links (engine.c) ------------------------ */

/* Decode the header in s->hdr: an abort frame (its first s->done bytes of
 * text already in s->x->buf) adopts the peer's status, any other
 * difference from the expected frame is a mismatch; both fail the group. */
dc_status dc_engine_check_header(dc_engine *t, dc_comm *c, dc_xstep *s);
/* The rest of an abort frame whose header (hdr, decoded into f) came
 * while something else was expected; got bytes of its text at early. */
dc_status dc_engine_read_abort(dc_engine *t, dc_conn *k, const dc_frame *f,
                               const unsigned char *hdr, const void *early,
                               size_t got);

static inline dc_frame dc_frame_of(const dc_comm *c, size_t len) {
  dc_frame f = {.kind = DC_FRAME_DATA,
                .opcode = c->opcode,
                .dtype = (uint8_t)c->dtype,
                .redop = (uint8_t)c->op,
                .seq = c->seq,
                .count = c->count,
                .len = len,
                .aux = c->aux};
  return f;
}

/* A header that arrived whole at h: bytes equal to the one expected
 * (s->hdr, encoded at setup) need no decoding. Returns 1 when it is good. */
static inline int dc_xstep_header_ok(dc_engine *t, dc_comm *c, dc_xstep *s,
                                     const unsigned char *h, dc_status *st) {
  if (memcmp(h, s->hdr, DC_FRAME_BYTES) != 0) {
    memcpy(s->hdr, h, DC_FRAME_BYTES);
    *st = dc_engine_check_header(t, c, s);
  }
  return *st == DC_OK;
}

/* buf[done..] = own op in, for bytes (whole elements) of incoming data. */
static inline void dc_xstep_reduce(dc_comm *c, dc_xstep *s, const void *in,
                                   size_t bytes) {
  size_t es = dc_dtype_size(c->dtype);
  char *dst = (char *)s->x->buf + s->done;
  const char *own = s->x->src ? (const char *)s->x->src + s->done : dst;
  if (own != dst && bytes)
    memcpy(dst, own, bytes); /* just in time: dst stays in cache */
  dc_reduce(dst, in, bytes / es, c->dtype, c->op);
  s->done += bytes;
}

/* Reduce the whole elements in the conn's window into the destination. */
static inline void dc_xstep_flush(dc_comm *c, dc_xstep *s) {
  size_t es = dc_dtype_size(c->dtype);
  size_t whole = s->in_window / es * es;
  dc_xstep_reduce(c, s, s->conn->window, whole);
  s->in_window -= whole;
  memmove(s->conn->window, s->conn->window + whole, s->in_window);
}

#endif
