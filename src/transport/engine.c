/* The TCP progress engine (see engine.h). */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/group.h"
#include "core/reduce.h"
#include "transport/engine.h"
#include "transport/frame.h"
#include "transport/sock.h"

#define WINDOW_BYTES (256u * 1024u) /* reduce-on-receive scratch: fits L2 */
#define MAX_IO (8u << 20)            /* bytes per syscall: keep lanes fair */
#define SPIN_SECONDS 50e-6

typedef struct xstate {
  dc_xfer *x;
  dc_conn *conn;
  int prev;      /* earlier transfer on the same connection and direction */
  int finished;
  unsigned char hdr[DC_FRAME_BYTES];
  size_t hdr_done, done, in_window;
} xstate;

dc_tcp *dc_tcp_new(dc_group *g, int rank, int size, int lanes) {
  dc_tcp *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->g = g;
  t->rank = rank;
  t->size = size;
  t->lanes = lanes;
  t->conns = calloc((size_t)size * (size_t)lanes, sizeof *t->conns);
  t->p2p_tx = calloc((size_t)size, sizeof *t->p2p_tx);
  t->p2p_rx = calloc((size_t)size, sizeof *t->p2p_rx);
  if (!t->conns || !t->p2p_tx || !t->p2p_rx) {
    dc_tcp_free(t);
    return NULL;
  }
  for (int i = 0; i < size * lanes; i++) {
    t->conns[i].fd = -1;
    t->conns[i].peer = i / lanes;
    t->conns[i].lane = i % lanes;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  t->spin = size <= cpus; /* spinning only helps when nobody waits for a core */
  return t;
}

void dc_tcp_free(dc_tcp *t) {
  if (!t)
    return;
  for (int i = 0; t->conns && i < t->size * t->lanes; i++) {
    if (t->conns[i].fd >= 0)
      close(t->conns[i].fd);
    free(t->conns[i].window);
  }
  free(t->conns);
  free(t->p2p_tx);
  free(t->p2p_rx);
  free(t);
}

void dc_tcp_begin(dc_tcp *t, dc_comm *c, uint8_t opcode, size_t count,
                  dc_dtype dtype, dc_op op, uint32_t aux, uint32_t seq) {
  memset(c, 0, sizeof *c);
  c->rank = t->rank;
  c->size = t->size;
  c->lanes = t->lanes;
  c->opcode = opcode;
  c->dtype = dtype;
  c->op = op;
  c->count = count;
  c->aux = aux;
  c->seq = seq;
  c->total_bytes = count * dc_dtype_size(dtype);
  c->run = dc_tcp_run;
  c->ctx = t;
  for (int i = 0; i < t->size * t->lanes; i++)
    t->conns[i].op_rx = 0;
}

static dc_frame frame_of(const dc_comm *c, size_t len) {
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

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* ---- errors ------------------------------------------------------------ */

static dc_status lost(dc_tcp *t, const dc_comm *c, dc_conn *k, int err) {
  return dc_fail(t->g, DC_ERR_PEER_LOST,
                 "rank %d (%s) %s after %.1f MiB of %.1f MiB", k->peer,
                 k->addr, err ? strerror(err) : "closed the connection",
                 mib(k->op_rx), mib(c->total_bytes));
}

/* The peer failed first and told us why: adopt its status. */
static dc_status read_abort(dc_tcp *t, dc_conn *k, const dc_frame *f) {
  char text[DC_ABORT_TEXT_MAX + 1] = "";
  size_t n = f->len < DC_ABORT_TEXT_MAX ? f->len : DC_ABORT_TEXT_MAX;
  dc_sock_read_all(k->fd, text, n, dc_now() + 1.0);
  text[n] = '\0';
  dc_status st = (dc_status)(int32_t)f->aux;
  if (st >= 0 || st < DC_ERR_ABORTED)
    st = DC_ERR_PEER_LOST;
  return dc_fail(t->g, st, "rank %d (%s) failed: %s", k->peer, k->addr, text);
}

static dc_status check_header(dc_tcp *t, dc_comm *c, xstate *s) {
  dc_frame got, want = frame_of(c, s->x->len);
  dc_conn *k = s->conn;
  if (dc_frame_decode(s->hdr, &got) != DC_OK)
    return dc_fail(t->g, DC_ERR_MISMATCH,
                   "rank %d (%s) sent bytes that are not a distcomm frame "
                   "(the ranks are out of step)",
                   k->peer, k->addr);
  if (got.kind == DC_FRAME_ABORT)
    return read_abort(t, k, &got);
  char diff[256];
  dc_frame_diff(&want, &got, diff, sizeof diff);
  if (diff[0])
    return dc_fail(t->g, DC_ERR_MISMATCH, "rank %d (%s) disagrees: %s",
                   k->peer, k->addr, diff);
  return DC_OK;
}

/* ---- one step of a transfer ------------------------------------------ */

/* Returns bytes moved (0: would block), or -errno / -1 on EOF. */
static ssize_t step_send(xstate *s) {
  struct iovec iov[2];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] = (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  size_t left = s->x->len - s->done;
  if (left)
    iov[n++] = (struct iovec){(char *)s->x->buf + s->done,
                              left < MAX_IO ? left : MAX_IO};
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t w = sendmsg(s->conn->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  size_t h = DC_FRAME_BYTES - s->hdr_done;
  size_t used = (size_t)w < h ? (size_t)w : h;
  s->hdr_done += used;
  s->done += (size_t)w - used;
  s->conn->tx_left = DC_FRAME_BYTES - s->hdr_done + s->x->len - s->done;
  s->finished = s->conn->tx_left == 0;
  return w;
}

static ssize_t recv_some(int fd, void *p, size_t n) {
  ssize_t r = recv(fd, p, n < MAX_IO ? n : MAX_IO, MSG_DONTWAIT);
  if (r == 0)
    return -1;
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  return r;
}

/* Reduce the whole elements in the window into the destination. */
static void flush_window(dc_comm *c, xstate *s) {
  size_t es = dc_dtype_size(c->dtype);
  size_t whole = s->in_window / es * es;
  char *dst = (char *)s->x->buf + s->done;
  const char *src = s->x->src ? (const char *)s->x->src + s->done : dst;
  if (src != dst)
    memcpy(dst, src, whole); /* just in time: dst stays in cache */
  dc_reduce((char *)s->x->buf + s->done, s->conn->window, whole / es,
            c->dtype, c->op);
  s->done += whole;
  s->in_window -= whole;
  memmove(s->conn->window, s->conn->window + whole, s->in_window);
}

static ssize_t step_payload(dc_comm *c, xstate *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done - s->in_window;
  if (!s->x->reduce) {
    ssize_t r = recv_some(k->fd, (char *)s->x->buf + s->done, left);
    if (r > 0)
      s->done += (size_t)r;
    return r;
  }
  size_t room = WINDOW_BYTES - s->in_window;
  ssize_t r = recv_some(k->fd, k->window + s->in_window, left < room ? left : room);
  if (r > 0) {
    s->in_window += (size_t)r;
    if (s->in_window == WINDOW_BYTES || (size_t)r == left)
      flush_window(c, s);
  }
  return r;
}

static ssize_t step_recv(dc_tcp *t, dc_comm *c, xstate *s, dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r;
  if (s->hdr_done < DC_FRAME_BYTES) {
    r = recv_some(k->fd, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r > 0 && (s->hdr_done += (size_t)r) == DC_FRAME_BYTES)
      *st = check_header(t, c, s);
  } else {
    r = step_payload(c, s);
    if (r > 0)
      k->op_rx += (uint64_t)r;
  }
  s->finished = *st == DC_OK && s->hdr_done == DC_FRAME_BYTES &&
                s->done == s->x->len;
  return r;
}

/* ---- the batch loop ---------------------------------------------------- */

static dc_status setup(dc_tcp *t, dc_comm *c, dc_xfer *x, int n, xstate *s) {
  for (int i = 0; i < n; i++) {
    dc_conn *k = &t->conns[x[i].peer * t->lanes + x[i].lane];
    s[i] = (xstate){.x = &x[i], .conn = k, .prev = -1};
    if (k->fd < 0)
      return dc_fail(t->g, DC_ERR_INVALID, "no connection to rank %d",
                     x[i].peer);
    if (x[i].reduce && !k->window && !(k->window = malloc(WINDOW_BYTES)))
      return dc_fail(t->g, DC_ERR_NOMEM, "no memory for a receive window");
    for (int j = i - 1; j >= 0 && s[i].prev < 0; j--)
      if (s[j].conn == k && x[j].is_send == x[i].is_send)
        s[i].prev = j;
    if (x[i].is_send) {
      dc_frame f = frame_of(c, x[i].len);
      dc_frame_encode(&f, s[i].hdr);
    }
  }
  return DC_OK;
}

static int active(const xstate *s, int i) {
  return !s[i].finished && (s[i].prev < 0 || s[s[i].prev].finished);
}

/* One pass over the active transfers; *moved tells if any byte moved. */
static dc_status pass(dc_tcp *t, dc_comm *c, xstate *s, int n, int *moved,
                      int *left) {
  *moved = 0;
  *left = 0;
  for (int i = 0; i < n; i++) {
    if (!active(s, i)) {
      *left += !s[i].finished;
      continue;
    }
    dc_status st = DC_OK;
    ssize_t r = s[i].x->is_send ? step_send(&s[i]) : step_recv(t, c, &s[i], &st);
    if (st != DC_OK)
      return st;
    if (r < 0)
      return lost(t, c, s[i].conn, r == -1 ? 0 : (int)-r);
    *moved |= r > 0;
    *left += !s[i].finished;
  }
  return DC_OK;
}

static dc_status timed_out(dc_tcp *t, dc_comm *c, xstate *s, int n) {
  for (int i = 0; i < n; i++)
    if (active(s, i))
      return dc_fail(t->g, DC_ERR_TIMEOUT,
                     "no progress for %.0f s waiting for rank %d (%s) to %s "
                     "(%.1f MiB of %.1f MiB received from it)",
                     t->g->timeout_s, s[i].conn->peer, s[i].conn->addr,
                     s[i].x->is_send ? "take our data" : "send",
                     mib(s[i].conn->op_rx), mib(c->total_bytes));
  return dc_fail(t->g, DC_ERR_TIMEOUT, "no progress");
}

static void wait_ready(dc_tcp *t, xstate *s, int n, double left) {
  struct pollfd p[256];
  int m = 0;
  for (int i = 0; i < n && m < 256; i++) {
    if (!active(s, i))
      continue;
    short ev = s[i].x->is_send ? POLLOUT : POLLIN;
    int j = 0;
    while (j < m && p[j].fd != s[i].conn->fd)
      j++;
    if (j == m)
      p[m++] = (struct pollfd){.fd = s[i].conn->fd};
    p[j].events |= ev;
  }
  (void)t;
  int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
  poll(p, (nfds_t)m, ms);
}

static dc_status run_batch(dc_tcp *t, dc_comm *c, xstate *s, int n) {
  double last = dc_now(), spin_until = last + (t->spin ? SPIN_SECONDS : 0);
  double asked = last;
  for (;;) {
    int moved, left;
    dc_status st = pass(t, c, s, n, &moved, &left);
    if (st != DC_OK || left == 0)
      return st;
    double now = dc_now();
    if (moved) {
      last = now;
      spin_until = now + (t->spin ? SPIN_SECONDS : 0);
      continue;
    }
    if (now - last > t->g->timeout_s)
      return timed_out(t, c, s, n);
    if (now < spin_until)
      continue;
    wait_ready(t, s, n, t->g->timeout_s - (now - last));
    if (t->g->interrupt && now - asked >= 0.05) { /* cheap, but not free */
      asked = now;
      if (t->g->interrupt(t->g->interrupt_arg))
        return dc_fail(t->g, DC_ERR_INTERRUPTED, "interrupted while waiting");
    }
  }
}

dc_status dc_tcp_run(dc_comm *c, dc_xfer *x, int n) {
  dc_tcp *t = c->ctx;
  xstate local[64];
  xstate *s = n <= 64 ? local : malloc(sizeof *s * (size_t)n);
  if (!s)
    return dc_fail(t->g, DC_ERR_NOMEM, "no memory for %d transfers", n);
  dc_status st = setup(t, c, x, n, s);
  if (st == DC_OK)
    st = run_batch(t, c, s, n);
  if (s != local)
    free(s);
  return st;
}

/* ---- poisoning ----------------------------------------------------------- */

/* Finish a half-written frame with zeros so the abort lands on a boundary;
 * give up quickly (the peer may not be reading). */
static int pad_frame(dc_conn *k, double deadline) {
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

/* Read and drop what peers still send until each closes its side, so that
 * our close() does not reset the connection and destroy the abort frame we
 * sent before the peer has read it. Bounded: a peer that keeps sending past
 * the deadline gets the reset. */
static void drain(dc_tcp *t, double deadline) {
  static char sink[65536];
  int open = 1;
  while (open && dc_now() < deadline) {
    open = 0;
    for (int i = 0; i < t->size * t->lanes; i++) {
      dc_conn *k = &t->conns[i];
      if (k->fd < 0 || k->tx_left == SIZE_MAX)
        continue;
      ssize_t r = recv(k->fd, sink, sizeof sink, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
        k->tx_left = SIZE_MAX; /* drained: the peer has closed */
      else
        open = 1;
    }
    if (open)
      usleep(1000);
  }
}

void dc_tcp_poison(dc_tcp *t, dc_status st, const char *why) {
  double deadline = dc_now() + 0.2;
  size_t len = strlen(why);
  if (len > DC_ABORT_TEXT_MAX)
    len = DC_ABORT_TEXT_MAX;
  for (int i = 0; i < t->size * t->lanes; i++) {
    dc_conn *k = &t->conns[i];
    if (k->fd < 0)
      continue;
    if (pad_frame(k, deadline)) {
      dc_frame f = {.kind = DC_FRAME_ABORT, .len = len, .aux = (uint32_t)st};
      unsigned char h[DC_FRAME_BYTES];
      dc_frame_encode(&f, h);
      dc_sock_write_all(k->fd, h, sizeof h, deadline);
      dc_sock_write_all(k->fd, why, len, deadline);
    }
    shutdown(k->fd, SHUT_WR);
    k->tx_left = 0;
  }
  drain(t, dc_now() + 0.5);
}
