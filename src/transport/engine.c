/* The TCP progress engine (see engine.h). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "algo/tune.h"
#include "core/group.h" /* dc_now */
#include "kernels/reduce.h"
#include "transport/auth.h" /* dc_seal: DISTCOMM_SECURE */
#include "transport/engine.h"
#include "transport/frame.h"
#include "transport/shm.h"
#include "transport/sock.h"

#define WINDOW_BYTES (256u * 1024u) /* reduce-on-receive scratch: fits L2 */
#define MAX_IO (8u << 20)           /* bytes per syscall: keep lanes fair */
#define SPIN_SECONDS 50e-6
#define SHM_STEP (64u * 1024u) /* publish pipe bytes this often */
#define SHM_SMALL 4096u        /* frames taken from a pipe in one go */
#define BACKOFF_MIN_US 20      /* sleeping while a same-host peer */
#define BACKOFF_MAX_US 1000    /* is slow: never 100% CPU forever */

_Static_assert(DC_MBOX_HDR == DC_FRAME_BYTES, "a mailbox slot holds a frame");
_Static_assert(sizeof(dc_mbox_slot) == 64, "a mailbox slot is one line");

typedef struct xstate {
  dc_xfer *x;
  dc_conn *conn;
  int prev; /* earlier transfer on the same connection and direction */
  int finished;
  unsigned char hdr[DC_FRAME_BYTES];
  size_t hdr_done, done, in_window;
  /* DISTCOMM_SECURE: the frame's tag after its payload (tag_len 0 without) */
  size_t tag_len, tag_done;
  int tagged, counted; /* sending: tag made, first byte out (counter used) */
  unsigned char tag[DC_SEAL_TAG_BYTES];
} xstate;

dc_tcp *dc_tcp_new(const dc_mesh_hooks *h, int rank, int size, int lanes) {
  dc_tcp *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->hooks = *h;
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
    dc_seal_free(t->conns[i].seal);
  }
  for (int i = 0; i < t->nsegs; i++)
    dc_shm_close(&t->segs[i]);
  free(t->segs);
  free(t->tune);
  free(t->conns);
  free(t->p2p_tx);
  free(t->p2p_rx);
  free(t);
}

int dc_tcp_connected(const dc_tcp *t, int peer, int lane) {
  return t->conns[peer * t->lanes + lane].fd >= 0;
}

void dc_tcp_attach(dc_tcp *t, int peer, int lane, int fd, uint64_t host,
                   const char *addr) {
  dc_conn *k = &t->conns[peer * t->lanes + lane];
  k->fd = fd;
  k->host = host;
  snprintf(k->addr, sizeof k->addr, "%s", addr);
}

void dc_tcp_seal(dc_tcp *t, int peer, int lane, dc_seal *seal) {
  dc_conn *k = &t->conns[peer * t->lanes + lane];
  dc_seal_free(k->seal);
  k->seal = seal;
}

uint64_t dc_tcp_peer_host(const dc_tcp *t, int peer) {
  return t->conns[peer * t->lanes].host;
}

dc_shm_seg *dc_tcp_new_segs(dc_tcp *t, int n) {
  t->segs = calloc((size_t)n, sizeof *t->segs);
  t->nsegs = t->segs ? n : 0;
  return t->segs;
}

void dc_tcp_wire_pipes(dc_tcp *t, int peer, int lane, dc_pipe *tx,
                       dc_pipe *rx) {
  t->conns[peer * t->lanes + lane].tx = tx;
  t->conns[peer * t->lanes + lane].rx = rx;
  dc_tcp_seal(t, peer, lane, NULL); /* shared memory: not authenticated */
}

void dc_tcp_set_pid(dc_tcp *t, int peer, int pid) {
  for (int l = 0; l < t->lanes; l++)
    t->conns[peer * t->lanes + l].pid = pid;
}

void dc_tcp_set_pull(dc_tcp *t, int one_host, int pull_ok, int forced) {
  t->one_host = one_host;
  t->pull_ok = pull_ok;
  if (t->pull_ok && (t->tune = calloc(1, sizeof *t->tune)) != NULL)
    t->tune->mode = forced ? DC_TUNE_PULL : DC_TUNE_AUTO;
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
  c->pull = t->one_host ? dc_tcp_pull : NULL;
  c->pull_ok = t->pull_ok;
  c->tune = t->tune;
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

/* The owner records the failure (and poisons itself); we return st. */
dc_status dc_tcp_fail(dc_tcp *t, dc_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = t->hooks.fail(t->hooks.arg, st, fmt, ap);
  va_end(ap);
  return st;
}

void dc_tcp_log(dc_tcp *t, const char *fmt, ...) {
  if (!t->hooks.log)
    return;
  va_list ap;
  va_start(ap, fmt);
  t->hooks.log(t->hooks.arg, fmt, ap);
  va_end(ap);
}

double dc_tcp_timeout(const dc_tcp *t) {
  return t->hooks.timeout(t->hooks.arg);
}

static dc_status lost(dc_tcp *t, const dc_comm *c, dc_conn *k, int err) {
  return dc_tcp_fail(t, DC_ERR_PEER_LOST,
                     "rank %d (%s)%s%s after %.1f MiB of %.1f MiB", k->peer,
                     k->addr, err ? ": " : " ",
                     err ? strerror(err) : "closed the connection",
                     mib(k->op_rx), mib(c->total_bytes));
}

/* The peer failed first and told us why: adopt its status. The first
 * got bytes of its text may already have been read (into *early). On a
 * sealed connection the frame (its header hdr) must carry its tag. */
static dc_status read_abort(dc_tcp *t, dc_conn *k, const dc_frame *f,
                            const unsigned char *hdr, const void *early,
                            size_t got) {
  char text[DC_ABORT_TEXT_MAX + 1] = "";
  size_t n = f->len < DC_ABORT_TEXT_MAX ? f->len : DC_ABORT_TEXT_MAX;
  got = got < n ? got : n;
  if (got)
    memcpy(text, early, got);
  dc_sock_read_all(k->fd, text + got, n - got, dc_now() + 1.0);
  if (k->seal) {
    unsigned char tag[DC_SEAL_TAG_BYTES];
    dc_seal_begin(k->seal, hdr, DC_FRAME_BYTES);
    dc_seal_update(k->seal, text, n);
    if (f->len != n ||
        dc_sock_read_all(k->fd, tag, sizeof tag, dc_now() + 1.0) != DC_OK ||
        !dc_seal_check(k->seal, tag))
      return dc_tcp_fail(
          t, DC_ERR_AUTH,
          "rank %d (%s) sent an abort frame whose MAC does not match "
          "(DISTCOMM_SECURE): altered on the way, or not from rank "
          "%d",
          k->peer, k->addr, k->peer);
  }
  char safe[4 * DC_ABORT_TEXT_MAX + 1]; /* the peer's bytes, made printable */
  dc_escape_text(text, n, safe, sizeof safe);
  dc_status st = (dc_status)(int32_t)f->aux;
  if (st >= 0 || st < DC_ERR_ABORTED)
    st = DC_ERR_PEER_LOST;
  return dc_tcp_fail(t, st, "rank %d (%s) failed: %s", k->peer, k->addr, safe);
}

static dc_status check_header(dc_tcp *t, dc_comm *c, xstate *s) {
  dc_frame got, want = frame_of(c, s->x->len);
  dc_conn *k = s->conn;
  if (dc_frame_decode(s->hdr, &got) != DC_OK)
    return dc_tcp_fail(t, DC_ERR_MISMATCH,
                       "rank %d (%s) sent bytes that are not a distcomm frame "
                       "(the ranks are out of step)",
                       k->peer, k->addr);
  if (got.kind == DC_FRAME_ABORT) /* its text may have come with the header */
    return read_abort(t, k, &got, s->hdr, s->x->buf, s->done);
  char diff[256];
  dc_frame_diff(&want, &got, diff, sizeof diff);
  if (diff[0])
    return dc_tcp_fail(t, DC_ERR_MISMATCH, "rank %d (%s) disagrees: %s",
                       k->peer, k->addr, diff);
  return DC_OK;
}

/* ---- one step of a transfer ------------------------------------------ */

/* Byte I/O on a connection, through its pipe or its socket. Both return
 * bytes moved (0: would block), or -errno / -1 on EOF. */
static ssize_t conn_writev(dc_conn *k, struct iovec *iov, int n) {
  if (k->tx)
    return (ssize_t)dc_pipe_write(k->tx, &k->tx_tail, iov, n);
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t w = sendmsg(k->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  return w;
}

/* A socket frame's header and payload in one recvmsg (one syscall less per
 * small message): the payload lands in its buffer, which we would write
 * anyway. Bytes past the header count as payload read. */
static ssize_t sock_read_frame(xstate *s) {
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

static ssize_t conn_read(dc_conn *k, void *p, size_t n) {
  if (k->rx)
    return (ssize_t)dc_pipe_read(k->rx, p, n < SHM_STEP ? n : SHM_STEP);
  ssize_t r = recv(k->fd, p, n < MAX_IO ? n : MAX_IO, MSG_DONTWAIT);
  if (r == 0)
    return -1;
  if (r < 0)
    return errno == EAGAIN || errno == EINTR ? 0 : -errno;
  return r;
}

/* A frame whose payload fits a mailbox slot goes as one cache line. */
static int by_mbox(const xstate *s) {
  return s->conn->tx && s->x->len <= DC_MBOX_PAYLOAD;
}

static ssize_t send_mbox(xstate *s) {
  dc_conn *k = s->conn;
  if (!dc_mbox_put(k->tx, &k->mb_sent, &k->mb_taken, s->hdr, s->x->buf,
                   s->x->len))
    return 0;
  s->hdr_done = DC_FRAME_BYTES;
  s->done = s->x->len;
  s->finished = 1;
  k->tx_left = 0;
  return (ssize_t)(DC_FRAME_BYTES + s->x->len);
}

/* A sealed frame's tag, made before its first byte goes (over the whole
 * payload, which is ready when the send starts); goes out after the last
 * payload byte, in the same write when it fits. */
static int tag_iov(xstate *s, struct iovec *iov, int n, int last) {
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
static size_t tag_sent(xstate *s, size_t body) {
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

static ssize_t step_send(xstate *s) {
  if (by_mbox(s))
    return send_mbox(s);
  struct iovec iov[3];
  int n = 0;
  if (s->hdr_done < DC_FRAME_BYTES)
    iov[n++] =
        (struct iovec){s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done};
  size_t left = s->x->len - s->done, most = s->conn->tx ? SHM_STEP : MAX_IO;
  if (left)
    iov[n++] =
        (struct iovec){(char *)s->x->buf + s->done, left < most ? left : most};
  if (s->tag_len)
    n = tag_iov(s, iov, n, left <= most);
  ssize_t w = conn_writev(s->conn, iov, n);
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

/* buf[done..] = own op in, for bytes (whole elements) of incoming data. */
static void reduce_into(dc_comm *c, xstate *s, const void *in, size_t bytes) {
  size_t es = dc_dtype_size(c->dtype);
  char *dst = (char *)s->x->buf + s->done;
  const char *own = s->x->src ? (const char *)s->x->src + s->done : dst;
  if (own != dst && bytes)
    memcpy(dst, own, bytes); /* just in time: dst stays in cache */
  dc_reduce(dst, in, bytes / es, c->dtype, c->op);
  s->done += bytes;
}

/* Reduce the whole elements in the window into the destination. */
static void flush_window(dc_comm *c, xstate *s) {
  size_t es = dc_dtype_size(c->dtype);
  size_t whole = s->in_window / es * es;
  reduce_into(c, s, s->conn->window, whole);
  s->in_window -= whole;
  memmove(s->conn->window, s->conn->window + whole, s->in_window);
}

/* A pipe is reduced from where the bytes lie; only an element that wraps
 * round the end of the pipe goes through the window. */
static ssize_t reduce_from_pipe(dc_comm *c, xstate *s, size_t left) {
  size_t es = dc_dtype_size(c->dtype);
  const unsigned char *at;
  size_t k = s->in_window ? 0 : dc_pipe_peek(s->conn->rx, &at);
  k = (k < left ? k : left);
  k = (k < SHM_STEP ? k : SHM_STEP) / es * es;
  if (k == 0)
    return -2; /* take the window path */
  reduce_into(c, s, at, k);
  dc_pipe_consume(s->conn->rx, k);
  return (ssize_t)k;
}

static ssize_t step_payload(dc_comm *c, xstate *s) {
  dc_conn *k = s->conn;
  size_t left = s->x->len - s->done - s->in_window;
  if (!s->x->reduce) {
    ssize_t r = conn_read(k, (char *)s->x->buf + s->done, left);
    if (r > 0 && k->seal)
      dc_seal_update(k->seal, (char *)s->x->buf + s->done, (size_t)r);
    if (r > 0)
      s->done += (size_t)r;
    return r;
  }
  if (k->rx) {
    ssize_t r = reduce_from_pipe(c, s, left);
    if (r != -2)
      return r;
  }
  size_t es = dc_dtype_size(c->dtype), room = WINDOW_BYTES - s->in_window;
  if (k->rx) /* only the element that wraps, then back to reducing in place */
    room = es - s->in_window % es;
  ssize_t r = conn_read(k, k->window + s->in_window, left < room ? left : room);
  if (r > 0) {
    if (k->seal) /* before the bytes are reduced away */
      dc_seal_update(k->seal, k->window + s->in_window, (size_t)r);
    s->in_window += (size_t)r;
    if (s->in_window == WINDOW_BYTES || (size_t)r == left ||
        (k->rx && s->in_window % es == 0))
      flush_window(c, s);
  }
  return r;
}

/* A header that arrived whole at h: bytes equal to the one expected
 * (s->hdr, encoded at setup) need no decoding. Returns 1 when it is good. */
static int header_ok(dc_tcp *t, dc_comm *c, xstate *s, const unsigned char *h,
                     dc_status *st) {
  if (memcmp(h, s->hdr, DC_FRAME_BYTES) != 0) {
    memcpy(s->hdr, h, DC_FRAME_BYTES);
    *st = check_header(t, c, s);
  }
  return *st == DC_OK;
}

/* A small frame already whole in a pipe: header and payload in one go
 * (one look at the producer's head, one update of our tail). */
static ssize_t small_from_pipe(dc_tcp *t, dc_comm *c, xstate *s,
                               dc_status *st) {
  const unsigned char *at;
  size_t want = DC_FRAME_BYTES + s->x->len;
  if (dc_pipe_peek(s->conn->rx, &at) < want)
    return 0;
  s->hdr_done = DC_FRAME_BYTES;
  if (!header_ok(t, c, s, at, st))
    return (ssize_t)DC_FRAME_BYTES;
  if (s->x->len)
    memcpy(s->x->buf, at + DC_FRAME_BYTES, s->x->len);
  dc_pipe_consume(s->conn->rx, want);
  s->done = s->x->len;
  s->conn->op_rx += s->x->len;
  s->finished = 1;
  return (ssize_t)want;
}

static ssize_t recv_mbox(dc_tcp *t, dc_comm *c, xstate *s, dc_status *st) {
  dc_conn *k = s->conn;
  const dc_mbox_slot *m = dc_mbox_peek(k->rx, k->mb_got);
  if (!m)
    return 0;
  if (!header_ok(t, c, s, m->hdr, st))
    return DC_FRAME_BYTES;
  if (s->x->reduce)
    reduce_into(c, s, m->data, s->x->len);
  else if (s->x->len)
    memcpy(s->x->buf, m->data, s->x->len);
  dc_mbox_take(k->rx, &k->mb_got);
  s->hdr_done = DC_FRAME_BYTES;
  s->done = s->x->len;
  k->op_rx += s->x->len;
  s->finished = 1;
  return (ssize_t)(DC_FRAME_BYTES + s->x->len);
}

/* A sealed frame's tag failed: a peer that failed mid-frame pads the frame
 * and sends an abort (dc_tcp_poison), so an abort that follows at once
 * (with a good tag) is the reason; else the frame was altered. */
static dc_status bad_tag(dc_tcp *t, dc_comm *c, xstate *s) {
  dc_conn *k = s->conn;
  unsigned char h[DC_FRAME_BYTES];
  dc_frame f = frame_of(c, s->x->len);
  char what[128];
  if (dc_sock_read_all(k->fd, h, sizeof h, dc_now() + 0.2) == DC_OK &&
      dc_frame_decode(h, &f) == DC_OK && f.kind == DC_FRAME_ABORT)
    return read_abort(t, k, &f, h, NULL, 0);
  f = frame_of(c, s->x->len);
  dc_frame_describe(&f, what, sizeof what);
  return dc_tcp_fail(
      t, DC_ERR_AUTH,
      "rank %d (%s) sent a frame of %s whose MAC does not match "
      "(DISTCOMM_SECURE): its %zu bytes were altered on the way, or "
      "do not come from rank %d",
      k->peer, k->addr, what, s->x->len, k->peer);
}

/* Read a sealed frame's tag once its payload is in, and check it: the
 * transfer is finished only when it matches. */
static ssize_t recv_tag(dc_tcp *t, dc_comm *c, xstate *s, dc_status *st,
                        ssize_t r) {
  s->finished = 0;
  ssize_t g =
      conn_read(s->conn, s->tag + s->tag_done, s->tag_len - s->tag_done);
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

static ssize_t step_recv(dc_tcp *t, dc_comm *c, xstate *s, dc_status *st) {
  dc_conn *k = s->conn;
  ssize_t r;
  if (k->rx && s->x->len <= DC_MBOX_PAYLOAD)
    return recv_mbox(t, c, s, st);
  if (k->rx && s->hdr_done == 0 && !s->x->reduce && s->x->len <= SHM_SMALL) {
    r = small_from_pipe(t, c, s, st);
    if (r != 0)
      return r;
  }
  if (s->hdr_done < DC_FRAME_BYTES && !k->rx && !s->x->reduce && !k->seal) {
    r = sock_read_frame(s);
    if (r > 0 && s->hdr_done == DC_FRAME_BYTES)
      *st = check_header(t, c, s);
  } else if (s->hdr_done < DC_FRAME_BYTES) {
    r = conn_read(k, s->hdr + s->hdr_done, DC_FRAME_BYTES - s->hdr_done);
    if (r > 0 && (s->hdr_done += (size_t)r) == DC_FRAME_BYTES &&
        (*st = check_header(t, c, s)) == DC_OK && k->seal)
      dc_seal_begin(k->seal, s->hdr, DC_FRAME_BYTES);
  } else {
    r = 0;
  }
  /* the payload may be there already: take it now (small messages) */
  if (*st == DC_OK && s->hdr_done == DC_FRAME_BYTES && s->done < s->x->len) {
    ssize_t p = step_payload(c, s);
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

/* ---- the batch loop ---------------------------------------------------- */

static dc_status setup(dc_tcp *t, dc_comm *c, dc_xfer *x, int n, xstate *s) {
  for (int i = 0; i < n; i++) {
    dc_conn *k = &t->conns[x[i].peer * t->lanes + x[i].lane];
    s[i] = (xstate){.x = &x[i],
                    .conn = k,
                    .prev = -1,
                    .tag_len = k->seal ? DC_SEAL_TAG_BYTES : 0};
    if (k->fd < 0)
      return dc_tcp_fail(t, DC_ERR_INVALID, "no connection to rank %d",
                         x[i].peer);
    if (x[i].reduce && !k->window && !(k->window = malloc(WINDOW_BYTES)))
      return dc_tcp_fail(t, DC_ERR_NOMEM, "no memory for a receive window");
    for (int j = i - 1; j >= 0 && s[i].prev < 0; j--)
      if (s[j].conn == k && x[j].is_send == x[i].is_send)
        s[i].prev = j;
    /* to send, or to compare with what arrives (mailbox, small frames) */
    if (x[i].is_send || (k->rx && (x[i].len <= DC_MBOX_PAYLOAD ||
                                   (!x[i].reduce && x[i].len <= SHM_SMALL)))) {
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
    ssize_t r =
        s[i].x->is_send ? step_send(&s[i]) : step_recv(t, c, &s[i], &st);
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
      return dc_tcp_fail(
          t, DC_ERR_TIMEOUT,
          "no progress for %.0f s waiting for rank %d (%s) to %s "
          "(%.1f MiB of %.1f MiB received from it)",
          dc_tcp_timeout(t), s[i].conn->peer, s[i].conn->addr,
          s[i].x->is_send ? "take our data" : "send", mib(s[i].conn->op_rx),
          mib(c->total_bytes));
  return dc_tcp_fail(t, DC_ERR_TIMEOUT, "no progress");
}

/* A frame in the mailbox while we wait on the pipe, or the other way
 * round, can only come from a peer that runs another op (the two ends
 * chose different sizes): decode it to say how they differ. The sender
 * fills one before the other, so the first one we look at is checked
 * again after the second: a frame sent later does not count. */
static int crossed_frame(xstate *s) {
  dc_pipe *rx = s->conn->rx;
  unsigned char h[DC_FRAME_BYTES];
  const unsigned char *at;
  const dc_mbox_slot *m;
  if (s->x->len <= DC_MBOX_PAYLOAD) {
    if (!dc_pipe_look(rx, h, sizeof h) || dc_mbox_peek(rx, s->conn->mb_got))
      return 0;
  } else {
    if (!(m = dc_mbox_peek(rx, s->conn->mb_got)) || dc_pipe_peek(rx, &at))
      return 0;
    memcpy(h, m->hdr, sizeof h);
  }
  memcpy(s->hdr, h, sizeof h);
  return 1;
}

static dc_status crossed(dc_tcp *t, dc_comm *c, xstate *s, int n) {
  for (int i = 0; i < n; i++) {
    dc_conn *k = s[i].conn;
    if (!active(s, i) || s[i].x->is_send || !k->rx || s[i].hdr_done ||
        !crossed_frame(&s[i]))
      continue;
    dc_status st = check_header(t, c, &s[i]);
    return st != DC_OK ? st
                       : dc_tcp_fail(t, DC_ERR_MISMATCH,
                                     "rank %d (%s) sent a frame out of order",
                                     k->peer, k->addr);
  }
  return DC_OK;
}

/* A same-host peer's socket carries nothing but an abort frame or its end:
 * either way the wait is over. */
static dc_status check_control(dc_tcp *t, dc_comm *c, dc_conn *k) {
  unsigned char h[DC_FRAME_BYTES];
  dc_status st = dc_sock_read_all(k->fd, h, sizeof h, dc_now() + 1.0);
  if (st == DC_ERR_PEER_LOST)
    return lost(t, c, k, 0);
  dc_frame f;
  if (st != DC_OK || dc_frame_decode(h, &f) != DC_OK ||
      f.kind != DC_FRAME_ABORT)
    return dc_tcp_fail(t, DC_ERR_MISMATCH,
                       "rank %d (%s) sent unexpected bytes on its control "
                       "connection",
                       k->peer, k->addr);
  return read_abort(t, k, &f, h, NULL, 0);
}

/* Sleep until a socket is ready, or for *backoff_us when a same-host peer
 * is involved (pipes have no fd). Returns a same-host peer whose control
 * socket spoke, or NULL. */
static dc_conn *wait_ready(xstate *s, int n, double left, int *backoff_us) {
  struct pollfd p[256];
  dc_conn *who[256];
  int m = 0, shm = 0;
  for (int i = 0; i < n && m < 256; i++) {
    if (!active(s, i))
      continue;
    dc_conn *k = s[i].conn;
    short ev = k->tx ? POLLIN | POLLRDHUP : s[i].x->is_send ? POLLOUT : POLLIN;
    shm |= k->tx != NULL;
    int j = 0;
    while (j < m && p[j].fd != k->fd)
      j++;
    if (j == m) {
      who[m] = k;
      p[m++] = (struct pollfd){.fd = k->fd};
    }
    p[j].events |= ev;
  }
  double secs = shm ? *backoff_us * 1e-6 : left > 0.1 ? 0.1 : left;
  struct timespec ts = {(time_t)secs,
                        (long)((secs - (double)(time_t)secs) * 1e9)};
  if (ppoll(p, (nfds_t)m, &ts, NULL) <= 0)
    return NULL;
  if (shm && *backoff_us < BACKOFF_MAX_US)
    *backoff_us *= 2;
  for (int j = 0; j < m; j++)
    if (who[j]->tx && p[j].revents)
      return who[j];
  return NULL;
}

static dc_status run_batch(dc_tcp *t, dc_comm *c, xstate *s, int n) {
  int moved, left;
  dc_status st = pass(t, c, s, n, &moved, &left);
  if (st != DC_OK || left == 0) /* tiny ops are often done at once */
    return st;
  double last = dc_now(), spin_until = last + (t->spin ? SPIN_SECONDS : 0);
  double asked = last;
  int backoff = BACKOFF_MIN_US;
  dc_conn *spoke = NULL; /* a same-host peer's socket spoke: it may have
                            written its last bytes to the pipe and left */
  for (;;) {
    st = pass(t, c, s, n, &moved, &left);
    if (st != DC_OK || left == 0)
      return st;
    double now = dc_now();
    if (moved) {
      last = now;
      spin_until = now + (t->spin ? SPIN_SECONDS : 0);
      backoff = BACKOFF_MIN_US;
      spoke = NULL;
      continue;
    }
    if (spoke) /* and the pipe has nothing more */
      return check_control(t, c, spoke);
    if (now - last > dc_tcp_timeout(t))
      return timed_out(t, c, s, n);
    if (now < spin_until)
      continue;
    if ((st = crossed(t, c, s, n)) != DC_OK)
      return st;
    spoke = wait_ready(s, n, dc_tcp_timeout(t) - (now - last), &backoff);
    if (t->hooks.interrupt && now - asked >= 0.05) { /* cheap, not free */
      asked = now;
      if (t->hooks.interrupt(t->hooks.arg))
        return dc_tcp_fail(t, DC_ERR_INTERRUPTED, "interrupted while waiting");
    }
  }
}

dc_status dc_tcp_run(dc_comm *c, dc_xfer *x, int n) {
  dc_tcp *t = c->ctx;
  xstate local[64];
  xstate *s = n <= 64 ? local : malloc(sizeof *s * (size_t)n);
  if (!s)
    return dc_tcp_fail(t, DC_ERR_NOMEM, "no memory for %d transfers", n);
  dc_status st = setup(t, c, x, n, s);
  if (st == DC_OK)
    st = run_batch(t, c, s, n);
  if (s != local)
    free(s);
  return st;
}

/* Set-up proved that the peer's memory is readable; a failure now means
 * that the peer is gone (or the ranks are out of step). */
dc_status dc_tcp_pull(dc_comm *c, int peer, void *dst, uint64_t src,
                      size_t len) {
  dc_tcp *t = c->ctx;
  dc_conn *k = &t->conns[peer * t->lanes];
  while (len > 0) {
    ssize_t n = dc_cma_read(k->pid, dst, src, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return dc_tcp_fail(t, DC_ERR_PEER_LOST,
                         "rank %d (%s): reading its buffer failed "
                         "(process_vm_readv: %s) after %.1f MiB of %.1f MiB",
                         peer, k->addr,
                         n < 0 ? strerror(errno) : "nothing read",
                         mib(k->op_rx), mib(c->total_bytes));
    k->op_rx += (uint64_t)n;
    dst = (char *)dst + n;
    src += (uint64_t)n;
    len -= (size_t)n;
  }
  return DC_OK;
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
  char sink[4096]; /* per call: groups drain from their own threads */
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
    if (k->tx || pad_frame(k, deadline)) { /* pipes: the socket is idle */
      dc_frame f = {.kind = DC_FRAME_ABORT, .len = len, .aux = (uint32_t)st};
      unsigned char h[DC_FRAME_BYTES];
      dc_frame_encode(&f, h);
      dc_sock_write_all(k->fd, h, sizeof h, deadline);
      dc_sock_write_all(k->fd, why, len, deadline);
      if (k->seal) { /* sealed: the abort has its tag too */
        unsigned char tag[DC_SEAL_TAG_BYTES];
        dc_seal_tag(k->seal, h, sizeof h, why, len, tag);
        dc_seal_sent(k->seal);
        dc_sock_write_all(k->fd, tag, sizeof tag, deadline);
      }
    }
    shutdown(k->fd, SHUT_WR);
    k->tx_left = 0;
  }
  drain(t, dc_now() + 0.5);
}
