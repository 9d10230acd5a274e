/* The socket link (see link.h): frames over a non-blocking socket, with
 * the DISTCOMM_SECURE tag after each frame on a sealed connection. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
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

/* A sealed frame's tag, made before its first byte goes (over the whole
 * payload, which is ready when the send starts); goes out after the last
 * payload byte, in the same write when it fits. */
static int tag_iov(dc_xstep *s, struct iovec *iov, int n, int last) {
  if (!s->tagged) {
    dc_seal_tag(s->conn->seal, s->hdr, DC_FRAME_BYTES, s->x->buf, s->x->len,
                s->tag);
    s->tagged = 1;
  }
  if (last)
    iov[n++] = (struct iovec){s->tag + s->tag_done, s->tag_len - s->tag_done};
  return n;
}

/* Of w bytes written past the header, those past the payload were tag. */
static size_t tag_sent(dc_xstep *s, size_t body) {
  size_t left = s->x->len - s->done;
  if (!s->counted) { /* the frame's number is taken once a byte is out */
    dc_seal_sent(s->conn->seal);
    s->counted = 1;
  }
  if (body > left) {
    s->tag_done += body - left;
    body = left;
  }
  return body;
}

static ssize_t sock_send(dc_xstep *s) {
  struct iovec iov[3];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] =
        (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  size_t left = s->x->len - s->done;
  if (left)
    iov[n++] = (struct iovec){(char *)s->x->buf + s->done,
                              left < MAX_IO ? left : MAX_IO};
  if (s->tag_len)
    n = tag_iov(s, iov, n, left <= MAX_IO);
  ssize_t w = sock_writev(s->conn, iov, n);
  if (w <= 0)
    return w;
  size_t h = DC_FRAME_BYTES - s->hdr_done;
  size_t used = (size_t)w < h ? (size_t)w : h;
  size_t body = (size_t)w - used;
  s->hdr_done += used;
  s->done += s->tag_len ? tag_sent(s, body) : body;
  s->conn->tx_left = DC_FRAME_BYTES - s->hdr_done + s->x->len - s->done +
                     s->tag_len - s->tag_done;
  s->finished = s->conn->tx_left == 0;
  return w;
}

/* ---- receiving ---------------------------------------------------------- */

/* Payload into the buffer, or through the conn's window when reducing;
 * a sealed frame's MAC sees every byte before it is reduced away. */
static ssize_t sock_payload(dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done - s->in_window;
  if (!s->x->reduce) {
    ssize_t r = sock_read(k, (char *)s->x->buf + s->done, left);
    if (r > 0 && k->seal)
      dc_seal_update(k->seal, (char *)s->x->buf + s->done, (size_t)r);
    if (r > 0)
      s->done += (size_t)r;
    return r;
  }
  size_t room = DC_LINK_WINDOW - s->in_window;
  ssize_t r = sock_read(k, k->window + s->in_window, left < room ? left : room);
  if (r > 0) {
    if (k->seal) /* before the bytes are reduced away */
      dc_seal_update(k->seal, k->window + s->in_window, (size_t)r);
    s->in_window += (size_t)r;
    if (s->in_window == DC_LINK_WINDOW || (size_t)r == left)
      dc_xstep_flush(c, s);
  }
  return r;
}

/* A sealed frame's tag failed: a peer that failed mid-frame pads the frame
 * and sends an abort (dc_engine_poison), so an abort that follows at once
 * (with a good tag) is the reason; else the frame was altered. */
static dc_status bad_tag(dc_engine *t, dc_comm *c, dc_xstep *s) {
  dc_conn *k = s->conn;
  unsigned char h[DC_FRAME_BYTES];
  dc_frame f = dc_frame_of(c, s->x->len);
  char what[128];
  if (dc_sock_read_all(k->fd, h, sizeof h, dc_now() + 0.2) == DC_OK &&
      dc_frame_decode(h, &f) == DC_OK && f.kind == DC_FRAME_ABORT)
    return dc_engine_read_abort(t, k, &f, h, NULL, 0);
  f = dc_frame_of(c, s->x->len);
  dc_frame_describe(&f, what, sizeof what);
  return dc_engine_fail(
      t, DC_ERR_AUTH,
      "rank %d (%s) sent a frame of %s whose MAC does not match "
      "(DISTCOMM_SECURE): its %zu bytes were altered on the way, or "
      "do not come from rank %d",
      k->peer, k->addr, what, s->x->len, k->peer);
}

/* Read a sealed frame's tag once its payload is in, and check it: the
 * transfer is finished only when it matches. */
static ssize_t recv_tag(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st,
                        ssize_t r) {
  s->finished = 0;
  ssize_t g =
      sock_read(s->conn, s->tag + s->tag_done, s->tag_len - s->tag_done);
  if (g < 0)
    return g;
  s->tag_done += (size_t)g;
  if (s->tag_done < s->tag_len)
    return r + g;
  if (!dc_seal_check(s->conn->seal, s->tag))
    *st = bad_tag(t, c, s);
  s->finished = *st == DC_OK;
  return r + g;
}

static ssize_t sock_recv(dc_engine *t, dc_comm *c, dc_xstep *s, dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r;
  if (s->hdr_done < DC_FRAME_BYTES && !s->x->reduce && !k->seal) {
    r = sock_read_frame(s);
    if (r > 0 && s->hdr_done == DC_FRAME_BYTES)
      *st = dc_engine_check_header(t, c, s);
  } else if (s->hdr_done < DC_FRAME_BYTES) {
    r = sock_read(k, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r > 0 && (s->hdr_done += (size_t)r) == DC_FRAME_BYTES &&
        (*st = dc_engine_check_header(t, c, s)) == DC_OK && k->seal)
      dc_seal_begin(k->seal, s->hdr, DC_FRAME_BYTES);
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
  if (s->finished && k->seal)
    r = recv_tag(t, c, s, st, r);
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
