/* The socket link (see link.h): frames over a non-blocking socket; on a
 * sealed connection (DISTCOMM_SECURE) a frame's payload goes in records,
 * each followed by its tag (DC_SEAL_RECORD). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/clock.h"
#include "transport/link.h"
#include "transport/sock.h"

#define MAX_IO (8u << 20) /* bytes per syscall: keep lanes fair */

static ssize_t sock_writev(dc_conn *k, struct iovec *iov, int n) {
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t w = sendmsg(k->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  return w;
}

static ssize_t sock_read(dc_conn *k, void *p, size_t n) {
  ssize_t r = recv(k->fd, p, n < MAX_IO ? n : MAX_IO, MSG_DONTWAIT);
  if (r == 0)
    return -1;
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  return r;
}

/* A frame's header and payload in one recvmsg (one syscall less per small
 * message): the payload lands in its buffer, which we would write anyway.
 * Bytes past the header count as payload read. */
static ssize_t sock_read_frame(dc_xstep *s) {
  dc_conn *k = s->conn;
  size_t h = DC_FRAME_BYTES - s->hdr_done, left = s->x->len - s->done;
  left = left < MAX_IO ? left : MAX_IO;
  struct iovec iov[2] = {{s->hdr + s->hdr_done, h},
                         {(char *)s->x->buf + s->done, left}};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = left ? 2 : 1};
  ssize_t r = recvmsg(k->fd, &m, MSG_DONTWAIT);
  if (r == 0)
    return -1;
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  size_t body = (size_t)r > h ? (size_t)r - h : 0;
  s->hdr_done += (size_t)r - body;
  s->done += body;
  k->op_rx += body;
  return r;
}

/* ---- sending ------------------------------------------------------------ */

/* Tags that the rest of a sealed frame still carries after `from`. */
static size_t tags_after(const dc_xstep *s, size_t from) {
  size_t rest = s->x->len - from;
  return (rest + DC_SEAL_RECORD - 1) / DC_SEAL_RECORD * s->tag_len;
}

/* The next record's tag, made before its first byte goes (over the whole
 * record, which is ready when the send starts); the first record's tag
 * covers the header too. */
static void record_start(dc_xstep *s) {
  size_t left = s->x->len - s->done;
  int first = s->done == 0;
  s->rec_end = s->done + (left < DC_SEAL_RECORD ? left : DC_SEAL_RECORD);
  dc_seal_tag(s->conn->seal, first ? s->hdr : NULL, first ? DC_FRAME_BYTES : 0,
              (const char *)s->x->buf + s->done, s->rec_end - s->done, s->tag);
  s->tagged = 1;
  s->counted = 0;
  s->tag_done = 0;
}

/* A sealed frame: its header, then each record and its tag. */
static ssize_t sealed_send(dc_xstep *s) {
  if (!s->tagged)
    record_start(s);
  struct iovec iov[3];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] =
        (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  if (s->rec_end > s->done)
    iov[n++] =
        (struct iovec){(char *)s->x->buf + s->done, s->rec_end - s->done};
  iov[n++] = (struct iovec){s->tag + s->tag_done, s->tag_len - s->tag_done};
  ssize_t w = sock_writev(s->conn, iov, n);
  if (w <= 0)
    return w;
  if (!s->counted) { /* the record's number is taken once a byte is out */
    dc_seal_sent(s->conn->seal);
    s->counted = 1;
  }
  size_t h = DC_FRAME_BYTES - s->hdr_done;
  size_t used = (size_t)w < h ? (size_t)w : h, body = (size_t)w - used;
  size_t p = body < s->rec_end - s->done ? body : s->rec_end - s->done;
  s->hdr_done += used;
  s->done += p;
  s->tag_done += body - p;
  s->tagged = s->tag_done < s->tag_len;
  if (!s->tagged && s->done < s->x->len) {
    /* The frame has started: its next record takes its number now, so that
     * padding after a failure (sock_to_boundary) counts as that record,
     * and the abort that follows has the number the peer expects. */
    record_start(s);
    dc_seal_sent(s->conn->seal);
    s->counted = 1;
  }
  s->conn->tx_left = DC_FRAME_BYTES - s->hdr_done + s->x->len - s->done +
                     (s->tagged ? s->tag_len - s->tag_done : 0) +
                     tags_after(s, s->tagged ? s->rec_end : s->done);
  s->finished = s->conn->tx_left == 0;
  return w;
}

static ssize_t sock_send(dc_xstep *s) {
  if (s->tag_len)
    return sealed_send(s);
  struct iovec iov[2];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] =
        (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  size_t left = s->x->len - s->done;
  if (left)
    iov[n++] = (struct iovec){(char *)s->x->buf + s->done,
                              left < MAX_IO ? left : MAX_IO};
  ssize_t w = sock_writev(s->conn, iov, n);
  if (w <= 0)
    return w;
  size_t h = DC_FRAME_BYTES - s->hdr_done;
  size_t used = (size_t)w < h ? (size_t)w : h;
  s->hdr_done += used;
  s->done += (size_t)w - used;
  s->conn->tx_left = DC_FRAME_BYTES - s->hdr_done + s->x->len - s->done;
  s->finished = s->conn->tx_left == 0;
  return w;
}

/* ---- receiving ---------------------------------------------------------- */

/* Payload into the buffer, or through the conn's window when reducing. */
static ssize_t sock_payload(dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done - s->in_window;
  if (!s->x->reduce) {
    ssize_t r = sock_read(k, (char *)s->x->buf + s->done, left);
    if (r > 0)
      s->done += (size_t)r;
    return r;
  }
  size_t room = DC_LINK_WINDOW - s->in_window;
  ssize_t r = sock_read(k, k->window + s->in_window, left < room ? left : room);
  if (r > 0) {
    s->in_window += (size_t)r;
    if (s->in_window == DC_LINK_WINDOW || (size_t)r == left)
      dc_xstep_flush(c, s);
  }
  return r;
}

/* Reads and drops n bytes (the rest of a frame), giving up at deadline. */
static void skip_bytes(dc_conn *k, size_t n, double deadline) {
  char junk[4096];
  while (n > 0 && dc_now() < deadline) {
    size_t m = n < sizeof junk ? n : sizeof junk;
    if (dc_sock_read_all(k->fd, junk, m, deadline) != DC_OK)
      return;
    n -= m;
  }
}

/* A record's tag failed: a peer that failed mid-frame pads the frame and
 * sends an abort (dc_engine_poison), so an abort that follows the frame at
 * once (with a good tag) is the reason; else the record was altered. */
static dc_status bad_tag(dc_engine *t, dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  unsigned char h[DC_FRAME_BYTES];
  dc_frame f = dc_frame_of(c, s->x->len);
  char what[128];
  double deadline = dc_now() + 0.2;
  size_t after = s->done + s->in_window; /* the bad record's end */
  skip_bytes(k, s->x->len - after + tags_after(s, after), deadline);
  if (dc_sock_read_all(k->fd, h, sizeof h, deadline) == DC_OK &&
      dc_frame_decode(h, &f) == DC_OK && f.kind == DC_FRAME_ABORT)
    return dc_engine_read_abort(t, k, &f, h, NULL, 0);
  f = dc_frame_of(c, s->x->len);
  dc_frame_describe(&f, what, sizeof what);
  return dc_engine_fail(
      t, DC_ERR_AUTH,
      "rank %d (%s) sent a frame of %s whose MAC does not match "
      "(DISTCOMM_SECURE): its %zu bytes were altered on the way, or "
      "do not come from rank %d (bytes %zu..%zu refused, none of them "
      "written)",
      k->peer, k->addr, what, s->x->len, k->peer, s->done, after);
}

/* Bytes of the record being received: into the window, then its tag. */
static ssize_t read_record(dc_xstep *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done;
  size_t rec = left < DC_SEAL_RECORD ? left : DC_SEAL_RECORD;
  struct iovec iov[2];
  int n = 0;
  if (s->in_window < rec)
    iov[n++] = (struct iovec){k->window + s->in_window, rec - s->in_window};
  iov[n++] = (struct iovec){s->tag + s->tag_done, s->tag_len - s->tag_done};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t r = recvmsg(k->fd, &m, MSG_DONTWAIT);
  if (r == 0)
    return -1;
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  size_t body = rec - s->in_window < (size_t)r ? rec - s->in_window : (size_t)r;
  s->in_window += body;
  s->tag_done += (size_t)r - body;
  k->op_rx += body;
  return r;
}

/* A whole record and its tag: checked, then copied or reduced into the
 * user's buffer; the next record begins. */
static dc_status take_record(dc_engine *t, dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  dc_seal_update(k->seal, k->window, s->in_window);
  if (!dc_seal_check(k->seal, s->tag))
    return bad_tag(t, c, s);
  if (s->x->reduce) {
    dc_xstep_reduce(c, s, k->window, s->in_window);
  } else {
    memcpy((char *)s->x->buf + s->done, k->window, s->in_window);
    s->done += s->in_window;
  }
  s->in_window = 0;
  s->tag_done = 0;
  s->finished = s->done == s->x->len;
  if (!s->finished)
    dc_seal_begin(k->seal, NULL, 0);
  return DC_OK;
}

/* A sealed frame: the header (checked, and under the first record's tag),
 * then its records, none of whose bytes reach the buffer unchecked. */
static ssize_t sealed_recv(dc_engine *t, dc_comm *c, dc_xstep *s,
                           dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r = 0;
  if (s->hdr_done < DC_FRAME_BYTES) {
    r = sock_read(k, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r <= 0 || (s->hdr_done += (size_t)r) < DC_FRAME_BYTES)
      return r;
    if ((*st = dc_engine_check_header(t, c, s)) != DC_OK)
      return r;
    dc_seal_begin(k->seal, s->hdr, DC_FRAME_BYTES);
  }
  while (*st == DC_OK && !s->finished) {
    ssize_t g = read_record(s);
    if (g <= 0)
      return g < 0 ? g : r;
    r += g;
    if (s->tag_done == s->tag_len)
      *st = take_record(t, c, s);
  }
  return r;
}

static ssize_t sock_recv(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r;
  if (k->seal)
    return sealed_recv(t, c, s, st);
  if (s->hdr_done < DC_FRAME_BYTES && !s->x->reduce) {
    r = sock_read_frame(s);
    if (r > 0 && s->hdr_done == DC_FRAME_BYTES)
      *st = dc_engine_check_header(t, c, s);
  } else if (s->hdr_done < DC_FRAME_BYTES) {
    r = sock_read(k, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r > 0 && (s->hdr_done += (size_t)r) == DC_FRAME_BYTES)
      *st = dc_engine_check_header(t, c, s);
  } else {
    r = 0;
  }
  /* the payload may be there already: take it now (small messages) */
  if (*st == DC_OK && s->hdr_done == DC_FRAME_BYTES && s->done < s->x->len) {
    ssize_t p = sock_payload(c, s);
    if (p > 0)
      k->op_rx += (uint64_t)p;
    r = p < 0 ? p : r + p;
  }
  s->finished =
      *st == DC_OK && s->hdr_done == DC_FRAME_BYTES && s->done == s->x->len;
  return r;
}

/* ---- the table ----------------------------------------------------------- */

static int sock_wants_header(size_t len, int reduce) {
  (void)len;
  (void)reduce;
  return 0; /* headers are decoded as they come */
}

static short sock_events(int is_send, int *sleeps) {
  (void)sleeps;
  return is_send ? POLLOUT : POLLIN;
}

/* Finish a half-written frame with zeros so the abort lands on a boundary;
 * give up quickly (the peer may not be reading). */
static int sock_to_boundary(dc_conn *k, double deadline) {
  static const char zeros[4096];
  while (k->tx_left > 0 && dc_now() < deadline) {
    size_t n = k->tx_left < sizeof zeros ? k->tx_left : sizeof zeros;
    ssize_t w = send(k->fd, zeros, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0)
      k->tx_left -= (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EINTR)
      return 0;
  }
  return k->tx_left == 0;
}

const dc_link_ops dc_link_sock = {.name = "socket",
                                  .send = sock_send,
                                  .recv = sock_recv,
                                  .wants_header = sock_wants_header,
                                  .events = sock_events,
                                  .crossed = NULL,
                                  .to_boundary = sock_to_boundary};
