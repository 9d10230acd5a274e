/* The progress engine (see engine.h): the batch loop, header checks,
 * abort frames. How bytes move is each connection's link (link.h). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "transport/auth.h" /* dc_seal: DISTCOMM_SECURE */
#include "transport/engine.h"
#include "transport/frame.h"
#include "transport/link.h"
#include "transport/shm.h"
#include "transport/sock.h"

#define SPIN_SECONDS 50e-6
#define BACKOFF_MIN_US 20   /* sleeping while a link without a file */
#define BACKOFF_MAX_US 1000 /* descriptor is slow: never 100% CPU forever */
/* After the spin (none with more ranks than cores), give the core away
 * (sched_yield) for this long since the last progress before such a
 * sleep: a pipe's peer that waits for a core runs at once, where a timed
 * sleep would wake us a tick late. On a busy or stolen core (a VM's
 * neighbours, another job) a peer's stall often outlasts the spin: with
 * sleeps after 50 us, a 64 KiB all_gather beside one CPU hog took 60-90 us
 * against 4-28 us with 10 ms of yields (bench/peers/shm-tuning.md). Yielding
 * costs a syscall per look, and nothing when nobody else wants the core. */
#define YIELD_SECONDS 10e-3
/* The least progress a wait must make (config/env.h, DISTCOMM_TIMEOUT):
 * once bytes move, each timeout window must see MIN_RATE bytes a second on
 * average, so a peer that trickles (a byte now and then) is timed out too.
 * Far below any link's rate, even under valgrind. */
#define MIN_RATE (64.0 * 1024.0)

dc_engine *dc_engine_new(const dc_engine_hooks *h, int rank, int size,
                         int lanes) {
  dc_engine *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->hooks = *h;
  t->rank = rank;
  t->size = size;
  t->lanes = lanes;
  t->silent = -1;
  t->conns = calloc((size_t)size * (size_t)lanes, sizeof *t->conns);
  t->p2p_tx = calloc((size_t)size, sizeof *t->p2p_tx);
  t->p2p_rx = calloc((size_t)size, sizeof *t->p2p_rx);
  if (!t->conns || !t->p2p_tx || !t->p2p_rx) {
    dc_engine_free(t);
    return NULL;
  }
  for (int i = 0; i < size * lanes; i++) {
    t->conns[i].link = &dc_link_sock;
    t->conns[i].fd = -1;
    t->conns[i].peer = i / lanes;
    t->conns[i].lane = i % lanes;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  t->spin = size <= cpus; /* spinning only helps when nobody waits for a core */
  return t;
}

void dc_engine_free(dc_engine *t) {
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
  free(t->conns);
  free(t->p2p_tx);
  free(t->p2p_rx);
  free(t);
}

int dc_engine_connected(const dc_engine *t, int peer, int lane) {
  return t->conns[peer * t->lanes + lane].fd >= 0;
}

void dc_engine_attach(dc_engine *t, int peer, int lane, int fd, int unix_sock,
                      uint64_t host, const char *addr) {
  dc_conn *k = &t->conns[peer * t->lanes + lane];
  k->fd = fd;
  k->unix_sock = unix_sock;
  k->host = host;
  snprintf(k->addr, sizeof k->addr, "%s", addr);
}

void dc_engine_seal(dc_engine *t, int peer, int lane, dc_seal *seal) {
  dc_conn *k = &t->conns[peer * t->lanes + lane];
  dc_seal_free(k->seal);
  k->seal = seal;
}

uint64_t dc_engine_peer_host(const dc_engine *t, int peer) {
  return t->conns[peer * t->lanes].host;
}

dc_shm_seg *dc_engine_new_segs(dc_engine *t, int n) {
  t->segs = calloc((size_t)n, sizeof *t->segs);
  t->nsegs = t->segs ? n : 0;
  return t->segs;
}

void dc_engine_wire_pipes(dc_engine *t, int peer, int lane, dc_pipe *tx,
                          size_t tx_cap, dc_pipe *rx, size_t rx_cap) {
  dc_conn *k = &t->conns[peer * t->lanes + lane];
  k->tx = tx;
  k->rx = rx;
  k->tx_cap = tx_cap;
  k->rx_cap = rx_cap;
  k->link = &dc_link_pipe;
  dc_engine_seal(t, peer, lane, NULL); /* shared memory: not authenticated */
}

void dc_engine_set_pid(dc_engine *t, int peer, int pid) {
  for (int l = 0; l < t->lanes; l++)
    t->conns[peer * t->lanes + l].pid = pid;
}

/* forced is alike on every rank (setup_shm.c), whether it can pull or
 * not: the owner's tuner reads it (backends/native/build.c). */
void dc_engine_set_pull(dc_engine *t, int one_host, int pull_ok, int forced) {
  t->one_host = one_host;
  t->pull_ok = pull_ok;
  t->pull_forced = one_host && forced;
}

void dc_engine_begin(dc_engine *t, dc_comm *c, uint8_t opcode, size_t count,
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
  c->run = dc_engine_run;
  c->pull = t->one_host ? dc_engine_pull : NULL;
  c->pull_ok = t->pull_ok;
  c->ctx = t;
  t->op_id++;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* ---- errors ------------------------------------------------------------ */

/* The owner records the failure (and poisons itself); we return st. */
dc_status dc_engine_fail(dc_engine *t, dc_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = t->hooks.fail(t->hooks.arg, st, fmt, ap);
  va_end(ap);
  return st;
}

void dc_engine_log(dc_engine *t, const char *fmt, ...) {
  if (!t->hooks.log)
    return;
  va_list ap;
  va_start(ap, fmt);
  t->hooks.log(t->hooks.arg, fmt, ap);
  va_end(ap);
}

double dc_engine_timeout(const dc_engine *t) {
  return t->hooks.timeout(t->hooks.arg);
}

static dc_status lost(dc_engine *t, const dc_comm *c, dc_conn *k, int err) {
  if (err == DC_LINK_EPIPE_STATE)
    return dc_engine_fail(
        t, DC_ERR_PEER_LOST,
        "rank %d (%s) wrote its end of our shared-memory pipe "
        "out of range (a tail beyond what we wrote): not a "
        "well-behaved rank of this job",
        k->peer, k->addr);
  return dc_engine_fail(t, DC_ERR_PEER_LOST,
                        "rank %d (%s)%s%s after %.1f MiB of %.1f MiB", k->peer,
                        k->addr, err ? ": " : " ",
                        err ? strerror(err) : "closed the connection",
                        mib(k->op_rx), mib(c->total_bytes));
}

/* A step's failure (link.h: -1 the peer closed, else -errno). */
static dc_status step_lost(dc_engine *t, const dc_comm *c, dc_conn *k,
                           ssize_t r) {
  return lost(t, c, k, r == -1 ? 0 : (int)-r);
}

/* The peer failed first and told us why: adopt its status. The first
 * got bytes of its text may already have been read (into *early). On a
 * sealed connection the frame (its header hdr) must carry its tag. */
dc_status dc_engine_read_abort(dc_engine *t, dc_conn *k, const dc_frame *f,
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
      return dc_engine_fail(
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
  return dc_engine_fail(t, st, "rank %d (%s) failed: %s", k->peer, k->addr,
                        safe);
}

dc_status dc_engine_check_header(dc_engine *t, dc_comm *c, dc_xstep *s) {
  dc_frame got, want = dc_frame_of(c, s->x->len);
  dc_conn *k = s->conn;
  if (dc_frame_decode(s->hdr, &got) != DC_OK)
    return dc_engine_fail(
        t, DC_ERR_MISMATCH,
        "rank %d (%s) sent bytes that are not a distcomm frame "
        "(the ranks are out of step)",
        k->peer, k->addr);
  if (got.kind == DC_FRAME_ABORT) /* its text may have come with the header */
    return dc_engine_read_abort(t, k, &got, s->hdr, s->x->buf, s->done);
  char diff[256];
  dc_frame_diff(&want, &got, diff, sizeof diff);
  if (diff[0])
    return dc_engine_fail(t, DC_ERR_MISMATCH, "rank %d (%s) disagrees: %s",
                          k->peer, k->addr, diff);
  return DC_OK;
}

/* ---- the batch loop ---------------------------------------------------- */

/* Headers are encoded once per length: a batch's frames differ only there
 * (an exchange's sends and expected receives are the same bytes). A send
 * first on its connection starts at once: the peer waits for it, and the
 * rest of the set-up happens while it crosses (a small op's latency is
 * mostly its instructions before the first send). */
static dc_status setup(dc_engine *t, dc_comm *c, dc_xfer *x, int n,
                       dc_xstep *s) {
  int coded = -1; /* a step whose s->hdr holds the frame of its length */
  for (int i = 0; i < n; i++) {
    dc_conn *k = &t->conns[x[i].peer * t->lanes + x[i].lane];
    if (k->op_id != t->op_id) {
      k->op_id = t->op_id;
      k->op_rx = 0;
    }
    s[i] = (dc_xstep){.x = &x[i],
                      .conn = k,
                      .prev = -1,
                      .tag_len = k->seal ? DC_SEAL_TAG_BYTES : 0};
    if (k->fd < 0)
      return dc_engine_fail(t, DC_ERR_INVALID, "no connection to rank %d",
                            x[i].peer);
    int bounce = x[i].reduce || (k->seal && !x[i].is_send); /* records */
    if (bounce && !k->window && !(k->window = malloc(DC_LINK_WINDOW)))
      return dc_engine_fail(t, DC_ERR_NOMEM, "no memory for a receive window");
    for (int j = i - 1; j >= 0 && s[i].prev < 0; j--)
      if (s[j].conn == k && x[j].is_send == x[i].is_send)
        s[i].prev = j;
    /* to send, or to compare with what arrives (mailbox, small frames) */
    if (x[i].is_send || k->link->wants_header(x[i].len, x[i].reduce)) {
      if (coded >= 0 && x[coded].len == x[i].len) {
        memcpy(s[i].hdr, s[coded].hdr, DC_FRAME_BYTES);
      } else {
        dc_frame f = dc_frame_of(c, x[i].len);
        dc_frame_encode(&f, s[i].hdr);
        coded = i;
      }
    }
    if (x[i].is_send && s[i].prev < 0) {
      ssize_t r = k->link->send(&s[i]);
      if (r < 0)
        return step_lost(t, c, k, r);
    }
  }
  return DC_OK;
}

static int active(const dc_xstep *s, int i) {
  return !s[i].finished && (s[i].prev < 0 || s[s[i].prev].finished);
}

/* One pass over the active transfers; *moved tells if any byte moved. */
static dc_status pass(dc_engine *t, dc_comm *c, dc_xstep *s, int n,
                      size_t *moved, int *left) {
  *moved = 0;
  *left = 0;
  for (int i = 0; i < n; i++) {
    if (!active(s, i)) {
      *left += !s[i].finished;
      continue;
    }
    dc_status st = DC_OK;
    const dc_link_ops *l = s[i].conn->link;
    ssize_t r = s[i].x->is_send ? l->send(&s[i]) : l->recv(t, c, &s[i], &st);
    if (st != DC_OK)
      return st;
    if (r < 0)
      return step_lost(t, c, s[i].conn, r);
    *moved += (size_t)r;
    *left += !s[i].finished;
  }
  return DC_OK;
}

static dc_status timed_out(dc_engine *t, dc_comm *c, dc_xstep *s, int n) {
  for (int i = 0; i < n; i++) {
    if (!active(s, i))
      continue;
    if (t->silent < 0)
      t->silent = s[i].conn->peer;
    return dc_engine_fail(
        t, DC_ERR_TIMEOUT,
        "no progress for %.0f s waiting for rank %d (%s) to %s "
        "(%.1f MiB of %.1f MiB received from it)",
        dc_engine_timeout(t), s[i].conn->peer, s[i].conn->addr,
        s[i].x->is_send ? "take our data" : "send", mib(s[i].conn->op_rx),
        mib(c->total_bytes));
  }
  return dc_engine_fail(t, DC_ERR_TIMEOUT, "no progress");
}

/* Bytes moved, but too few for the window (MIN_RATE): the peer trickles. */
static dc_status too_slow(dc_engine *t, dc_comm *c, dc_xstep *s, int n,
                          size_t bytes, double secs) {
  for (int i = 0; i < n; i++)
    if (active(s, i))
      return dc_engine_fail(
          t, DC_ERR_TIMEOUT,
          "rank %d (%s) is too slow: %zu bytes in %.1f s, under the %.0f "
          "KiB/s that a wait must make in each DISTCOMM_TIMEOUT (%.0f s) "
          "(%.1f MiB of %.1f MiB received from it)",
          s[i].conn->peer, s[i].conn->addr, bytes, secs, MIN_RATE / 1024.0,
          dc_engine_timeout(t), mib(s[i].conn->op_rx), mib(c->total_bytes));
  return dc_engine_fail(t, DC_ERR_TIMEOUT, "too slow");
}

/* The rate window opens at the first byte and restarts once it holds its
 * MIN_RATE * timeout bytes, or a transfer finished (peers that arrive one
 * by one, each quickly, are no trickle). One that ends short is a trickle
 * once a byte comes after its end: a peer that stopped instead is left to
 * the idle rule ("no progress"), which fires within a timeout anyway. */
typedef struct rate_window {
  double opened; /* 0: no byte since the last restart */
  size_t bytes;
} rate_window;

static int trickles(rate_window *w, size_t moved, int finished, double now,
                    double timeout) {
  if (moved && w->opened == 0)
    w->opened = now;
  w->bytes += moved;
  if (finished || (double)w->bytes >= MIN_RATE * timeout) {
    w->opened = now;
    w->bytes = 0;
  }
  return moved && w->opened != 0 && now - w->opened > timeout;
}

/* Nothing moved: a link may see a frame that only a peer running another
 * op would send (shared-memory pipes: the two ends chose different sizes);
 * decode it to say how the ops differ. */
static dc_status crossed(dc_engine *t, dc_comm *c, dc_xstep *s, int n) {
  for (int i = 0; i < n; i++) {
    dc_conn *k = s[i].conn;
    if (!active(s, i) || s[i].x->is_send || !k->link->crossed ||
        s[i].hdr_done || !k->link->crossed(&s[i]))
      continue;
    dc_status st = dc_engine_check_header(t, c, &s[i]);
    return st != DC_OK
               ? st
               : dc_engine_fail(t, DC_ERR_MISMATCH,
                                "rank %d (%s) sent a frame out of order",
                                k->peer, k->addr);
  }
  return DC_OK;
}

/* The control socket of a link whose data goes elsewhere (a pipe) carries
 * nothing but an abort frame or its end: either way the wait is over. */
static dc_status check_control(dc_engine *t, dc_comm *c, dc_conn *k) {
  unsigned char h[DC_FRAME_BYTES];
  dc_status st = dc_sock_read_all(k->fd, h, sizeof h, dc_now() + 1.0);
  if (st == DC_ERR_PEER_LOST)
    return lost(t, c, k, 0);
  dc_frame f;
  if (st != DC_OK || dc_frame_decode(h, &f) != DC_OK ||
      f.kind != DC_FRAME_ABORT)
    return dc_engine_fail(t, DC_ERR_MISMATCH,
                          "rank %d (%s) sent unexpected bytes on its control "
                          "connection",
                          k->peer, k->addr);
  return dc_engine_read_abort(t, k, &f, h, NULL, 0);
}

/* Sleep until a socket is ready, or for *backoff_us when a link whose data
 * has no file descriptor (a pipe) is involved. Returns such a link's conn
 * whose control socket spoke, or NULL. */
static dc_conn *wait_ready(dc_xstep *s, int n, double left, int *backoff_us) {
  struct pollfd p[256];
  dc_conn *who[256];
  int control[256]; /* p[j] is a control socket: it spoke to abort or end */
  int m = 0, sleeps = 0;
  for (int i = 0; i < n && m < 256; i++) {
    if (!active(s, i))
      continue;
    dc_conn *k = s[i].conn;
    int sleeper = 0;
    short ev = k->link->events(s[i].x->is_send, &sleeper);
    sleeps |= sleeper;
    int j = 0;
    while (j < m && p[j].fd != k->fd)
      j++;
    if (j == m) {
      who[m] = k;
      control[m] = sleeper;
      p[m++] = (struct pollfd){.fd = k->fd};
    }
    p[j].events |= ev;
  }
  double secs = sleeps ? *backoff_us * 1e-6 : left > 0.1 ? 0.1 : left;
  struct timespec ts = {(time_t)secs,
                        (long)((secs - (double)(time_t)secs) * 1e9)};
  if (ppoll(p, (nfds_t)m, &ts, NULL) <= 0)
    return NULL;
  if (sleeps && *backoff_us < BACKOFF_MAX_US)
    *backoff_us *= 2;
  for (int j = 0; j < m; j++)
    if (control[j] && p[j].revents)
      return who[j];
  return NULL;
}

/* Whether a transfer waits on a link whose data has no file descriptor:
 * only a timed sleep or a yield sees its bytes come. */
static int on_pipes(dc_xstep *s, int n) {
  for (int i = 0; i < n; i++) {
    int sleeper = 0;
    s[i].conn->link->events(s[i].x->is_send, &sleeper);
    if (sleeper)
      return 1;
  }
  return 0;
}

static dc_status run_batch(dc_engine *t, dc_comm *c, dc_xstep *s, int n) {
  size_t moved;
  int left;
  rate_window rate = {0, 0};
  dc_status st = pass(t, c, s, n, &moved, &left);
  if (st != DC_OK || left == 0) /* tiny ops are often done at once */
    return st;
  double last = dc_now(), spin_until = last + (t->spin ? SPIN_SECONDS : 0);
  double asked = last;
  int backoff = BACKOFF_MIN_US, yields = on_pipes(s, n);
  dc_conn *spoke = NULL; /* a pipe link's control socket spoke: the peer may
                            have written its last bytes to the pipe and left */
  for (;;) {
    int was_left = left;
    st = pass(t, c, s, n, &moved, &left);
    if (st != DC_OK || left == 0)
      return st;
    double now = dc_now();
    /* Only when something moved or finished: an idle spin (the common wait
     * of a small op) pays no call for the rate window. */
    if ((moved || left < was_left) &&
        trickles(&rate, moved, left < was_left, now, dc_engine_timeout(t)))
      return too_slow(t, c, s, n, rate.bytes, now - rate.opened);
    if (moved) {
      last = now;
      spin_until = now + (t->spin ? SPIN_SECONDS : 0);
      backoff = BACKOFF_MIN_US;
      spoke = NULL;
      continue;
    }
    if (spoke) /* and the pipe has nothing more */
      return check_control(t, c, spoke);
    if (now - last > dc_engine_timeout(t))
      return timed_out(t, c, s, n);
    if (now < spin_until)
      continue;
    if (yields && now - last < YIELD_SECONDS) {
      sched_yield();
      continue;
    }
    if ((st = crossed(t, c, s, n)) != DC_OK)
      return st;
    spoke = wait_ready(s, n, dc_engine_timeout(t) - (now - last), &backoff);
    if (t->hooks.interrupt && now - asked >= 0.05) { /* cheap, not free */
      asked = now;
      if (t->hooks.interrupt(t->hooks.arg))
        return dc_engine_fail(t, DC_ERR_INTERRUPTED,
                              "interrupted while waiting");
    }
  }
}

dc_status dc_engine_run(dc_comm *c, dc_xfer *x, int n) {
  dc_engine *t = c->ctx;
  dc_xstep local[64];
  dc_xstep *s = n <= 64 ? local : malloc(sizeof *s * (size_t)n);
  if (!s)
    return dc_engine_fail(t, DC_ERR_NOMEM, "no memory for %d transfers", n);
  dc_status st = setup(t, c, x, n, s);
  if (st == DC_OK)
    st = run_batch(t, c, s, n);
  if (s != local)
    free(s);
  return st;
}

/* Set-up proved that the peer's memory is readable; a failure now means
 * that the peer is gone (or the ranks are out of step). */
dc_status dc_engine_pull(dc_comm *c, int peer, void *dst, uint64_t src,
                         size_t len) {
  dc_engine *t = c->ctx;
  dc_conn *k = &t->conns[peer * t->lanes];
  while (len > 0) {
    ssize_t n = dc_cma_read(k->pid, dst, src, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return dc_engine_fail(t, DC_ERR_PEER_LOST,
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

/* Read and drop what peers still send until each closes its side, so that
 * our close() does not reset the connection and destroy the abort frame we
 * sent before the peer has read it. Bounded: a peer that keeps sending past
 * the deadline gets the reset. Not the peer found silent: it would hold us
 * to the deadline, and the survivors' dc_group_shrink waits on this. */
static void drain(dc_engine *t, double deadline) {
  char sink[4096]; /* per call: groups drain from their own threads */
  int open = 1;
  while (open && dc_now() < deadline) {
    open = 0;
    for (int i = 0; i < t->size * t->lanes; i++) {
      dc_conn *k = &t->conns[i];
      if (k->fd < 0 || k->tx_left == SIZE_MAX || k->peer == t->silent)
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

void dc_engine_poison(dc_engine *t, dc_status st, const char *why) {
  double deadline = dc_now() + 0.2;
  size_t len = strlen(why);
  if (len > DC_ABORT_TEXT_MAX)
    len = DC_ABORT_TEXT_MAX;
  for (int i = 0; i < t->size * t->lanes; i++) {
    dc_conn *k = &t->conns[i];
    if (k->fd < 0)
      continue;
    if (k->link->to_boundary(k, deadline)) {
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
