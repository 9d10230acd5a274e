/* The shared-memory pipe link (see link.h): frames through a same-host
 * peer's pipes (transport/shm.h), a frame whose payload fits a mailbox
 * slot as one cache line. No file descriptor carries the data: the engine
 * sleeps with a backoff, and the conn's socket only says that the peer
 * failed (an abort frame) or left. Not authenticated: no seal. */
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "transport/link.h"
#include "transport/shm.h"

#define SHM_STEP (64u * 1024u) /* publish pipe bytes this often */
#define SHM_SMALL 4096u        /* frames taken from a pipe in one go */

_Static_assert(DC_MBOX_HDR == DC_FRAME_BYTES, "a mailbox slot holds a frame");
_Static_assert(sizeof(dc_mbox_slot) == 64, "a mailbox slot is one line");

static ssize_t pipe_read(dc_conn *k, void *p, size_t n) {
  return (ssize_t)dc_pipe_read(k->rx, k->rx_cap, p,
                               n < SHM_STEP ? n : SHM_STEP);
}

/* ---- sending ------------------------------------------------------------ */

/* A frame whose payload fits a mailbox slot goes as one cache line. */
static ssize_t send_mbox(dc_xstep *s) {
  dc_conn *k = s->conn;
  if (!dc_mbox_put(k->tx, &k->mb_sent, &k->mb_taken, s->hdr, s->x->buf,
                   s->x->len))
    return 0;
  s->hdr_done = DC_FRAME_BYTES;
  s->done = s->x->len;
  s->finished = 1;
  return (ssize_t)(DC_FRAME_BYTES + s->x->len);
}

static ssize_t pipe_send(dc_xstep *s) {
  if (s->x->len <= DC_MBOX_PAYLOAD)
    return send_mbox(s);
  struct iovec iov[2];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] =
        (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  size_t left = s->x->len - s->done;
  if (left)
    iov[n++] = (struct iovec){(char *)s->x->buf + s->done,
                              left < SHM_STEP ? left : SHM_STEP};
  size_t w =
      dc_pipe_write(s->conn->tx, s->conn->tx_cap, &s->conn->tx_tail, iov, n);
  if (w == DC_PIPE_BAD)
    return -DC_LINK_EPIPE_STATE;
  if (w == 0)
    return 0;
  size_t h = DC_FRAME_BYTES - s->hdr_done;
  size_t used = w < h ? w : h;
  s->hdr_done += used;
  s->done += w - used;
  s->finished = s->hdr_done == DC_FRAME_BYTES && s->done == s->x->len;
  return (ssize_t)w;
}

/* ---- receiving ---------------------------------------------------------- */

/* A pipe is reduced from where the bytes lie; only an element that wraps
 * round the end of the pipe goes through the window. */
static ssize_t reduce_from_pipe(dc_comm *c, dc_xstep *s, size_t left) {
  size_t es = dc_dtype_size(c->dtype);
  const unsigned char *at;
  size_t k = s->in_window ? 0 : dc_pipe_peek(s->conn->rx, s->conn->rx_cap, &at);
  k = (k < left ? k : left);
  k = (k < SHM_STEP ? k : SHM_STEP) / es * es;
  if (k == 0)
    return -2; /* take the window path */
  dc_xstep_reduce(c, s, at, k);
  dc_pipe_consume(s->conn->rx, k);
  return (ssize_t)k;
}

static ssize_t pipe_payload(dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done - s->in_window;
  if (!s->x->reduce) {
    ssize_t r = pipe_read(k, (char *)s->x->buf + s->done, left);
    if (r > 0)
      s->done += (size_t)r;
    return r;
  }
  ssize_t r = reduce_from_pipe(c, s, left);
  if (r != -2)
    return r;
  /* only the element that wraps, then back to reducing in place */
  size_t es = dc_dtype_size(c->dtype), room = es - s->in_window % es;
  r = pipe_read(k, k->window + s->in_window, left < room ? left : room);
  if (r > 0) {
    s->in_window += (size_t)r;
    if ((size_t)r == left || s->in_window % es == 0)
      dc_xstep_flush(c, s);
  }
  return r;
}

/* A small frame already whole in a pipe: header and payload in one go
 * (one look at the producer's head, one update of our tail). */
static ssize_t small_from_pipe(dc_engine *t, dc_comm *c, dc_xstep *s,
                               dc_status *st) {
  const unsigned char *at;
  size_t want = DC_FRAME_BYTES + s->x->len;
  if (dc_pipe_peek(s->conn->rx, s->conn->rx_cap, &at) < want)
    return 0;
  s->hdr_done = DC_FRAME_BYTES;
  if (!dc_xstep_header_ok(t, c, s, at, st))
    return (ssize_t)DC_FRAME_BYTES;
  if (s->x->len)
    memcpy(s->x->buf, at + DC_FRAME_BYTES, s->x->len);
  dc_pipe_consume(s->conn->rx, want);
  s->done = s->x->len;
  s->conn->op_rx += s->x->len;
  s->finished = 1;
  return (ssize_t)want;
}

static ssize_t recv_mbox(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st) {
  dc_conn *k = s->conn;
  const dc_mbox_slot *m = dc_mbox_peek(k->rx, k->mb_got);
  if (!m)
    return 0;
  if (!dc_xstep_header_ok(t, c, s, m->hdr, st))
    return DC_FRAME_BYTES;
  if (s->x->reduce)
    dc_xstep_reduce(c, s, m->data, s->x->len);
  else if (s->x->len)
    memcpy(s->x->buf, m->data, s->x->len);
  dc_mbox_take(k->rx, &k->mb_got);
  s->hdr_done = DC_FRAME_BYTES;
  s->done = s->x->len;
  k->op_rx += s->x->len;
  s->finished = 1;
  return (ssize_t)(DC_FRAME_BYTES + s->x->len);
}

static ssize_t pipe_recv(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r;
  if (s->x->len <= DC_MBOX_PAYLOAD)
    return recv_mbox(t, c, s, st);
  if (s->hdr_done == 0 && !s->x->reduce && s->x->len <= SHM_SMALL) {
    r = small_from_pipe(t, c, s, st);
    if (r != 0)
      return r;
  }
  if (s->hdr_done < DC_FRAME_BYTES) {
    r = pipe_read(k, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r > 0 && (s->hdr_done += (size_t)r) == DC_FRAME_BYTES)
      *st = dc_engine_check_header(t, c, s);
  } else {
    r = 0;
  }
  /* the payload may be there already: take it now (small messages) */
  if (*st == DC_OK && s->hdr_done == DC_FRAME_BYTES && s->done < s->x->len) {
    ssize_t p = pipe_payload(c, s);
    if (p > 0)
      k->op_rx += (uint64_t)p;
    r = p < 0 ? p : r + p;
  }
  s->finished =
      *st == DC_OK && s->hdr_done == DC_FRAME_BYTES && s->done == s->x->len;
  return r;
}

/* ---- the table ----------------------------------------------------------- */

/* Mailbox frames and small whole frames are compared with the expected
 * header by bytes (dc_xstep_header_ok). */
static int pipe_wants_header(size_t len, int reduce) {
  return len <= DC_MBOX_PAYLOAD || (!reduce && len <= SHM_SMALL);
}

/* The socket is the control path: it speaks only to abort or to close. */
static short pipe_events(int is_send, int *sleeps) {
  (void)is_send;
  *sleeps = 1;
  return POLLIN | POLLRDHUP;
}

/* A frame in the mailbox while we wait on the pipe, or the other way
 * round, can only come from a peer that runs another op (the two ends
 * chose different sizes): copy its header to say how they differ. The
 * sender fills one before the other, so the first one we look at is
 * checked again after the second: a frame sent later does not count. */
static int pipe_crossed(dc_xstep *s) {
  dc_pipe *rx = s->conn->rx;
  size_t cap = s->conn->rx_cap;
  unsigned char h[DC_FRAME_BYTES];
  const unsigned char *at;
  const dc_mbox_slot *m;
  if (s->x->len <= DC_MBOX_PAYLOAD) {
    if (!dc_pipe_look(rx, cap, h, sizeof h) ||
        dc_mbox_peek(rx, s->conn->mb_got))
      return 0;
  } else {
    if (!(m = dc_mbox_peek(rx, s->conn->mb_got)) || dc_pipe_peek(rx, cap, &at))
      return 0;
    memcpy(h, m->hdr, sizeof h);
  }
  memcpy(s->hdr, h, sizeof h);
  return 1;
}

static int pipe_to_boundary(dc_conn *k, double deadline) {
  (void)k;
  (void)deadline;
  return 1; /* the socket carries no data: it is always at a boundary */
}

const dc_link_ops dc_link_pipe = {.name = "shm pipe",
                                  .send = pipe_send,
                                  .recv = pipe_recv,
                                  .wants_header = pipe_wants_header,
                                  .events = pipe_events,
                                  .crossed = pipe_crossed,
                                  .to_boundary = pipe_to_boundary};
