/* Accepting a group's connections. Every connection that reaches a listener
 * is handshaken side by side with the others (up to PENDING_MAX at once),
 * so a stranger that connects and says nothing, says nonsense, or cannot
 * prove the job token is refused and logged without holding up the real
 * peers. Set-up goes on until every expected peer has joined or the group's
 * timeout passes. The listeners are closed once set-up is over, so later
 * strangers meet a closed port. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/waiting.h"
#include "transport/handshake.h"
#include "transport/sock.h"

#define PENDING_MAX 32      /* handshakes in flight */
#define HELLO_SECONDS 5.0   /* from accept to the last handshake byte */
#define CROWDED_SECONDS 0.5 /* when all are in flight, older ones give way */
#define LISTEN_MAX DC_HOSTFILE_MAX_ADDRS /* every address a listener */

typedef struct pending {
  int fd, listener;
  int proving;  /* the hello was good: waiting for the token proof */
  double since; /* accepted at (dc_now) */
  size_t have;  /* bytes of the hello or proof read so far */
  unsigned char buf[DC_HELLO_BYTES];
  dc_hello h;
  dc_auth_bind bind;
  char from[64];
} pending;

typedef struct acceptor {
  dc_engine *t;
  const dc_engine_plan *p;
  const dc_auth *auth;
  int nl;   /* TCP listeners; listener nl + l is the Unix twin of l, if any */
  int want; /* connections still expected */
  int full; /* a connection waits and no slot is free: the listeners rest */
  char refused[256]; /* the last refusal, for a timeout message */
  pending q[PENDING_MAX];
} acceptor;

/* Log why pd is refused, remember it, close it; returns 0 (not joined). */
static int refuse(acceptor *A, pending *pd, const char *why) {
  dc_engine_log(A->t, "refused a connection from %s: %s", pd->from, why);
  snprintf(A->refused, sizeof A->refused, "%s: %s", pd->from, why);
  close(pd->fd);
  pd->fd = -1;
  return 0;
}

/* Why a hello that came to listener l (its Unix twin: nl + l) cannot be
 * accepted, or DC_REFUSE_NONE. A slot being handshaken by someone else is no
 * reason: the first to finish wins, so a stranger cannot squat a real peer's
 * slot. */
static uint32_t judge(const acceptor *A, const dc_hello *h, int l, int fd) {
  const dc_engine_plan *p = A->p;
  uint32_t lanes = (uint32_t)dc_plan_lanes(p);
  if (h->kind != DC_HELLO || h->version != DC_WIRE_VERSION)
    return DC_REFUSE_VERSION;
  if (h->job != p->job || h->group != p->group)
    return DC_REFUSE_JOB;
  if (A->auth->on != !!(h->flags & DC_HELLO_TOKEN))
    return A->auth->on ? DC_REFUSE_AUTH : DC_REFUSE_NO_TOKEN;
  if (A->auth->secure != !!(h->flags & DC_HELLO_SECURE))
    return DC_REFUSE_SECURE;
  if (h->size != (uint32_t)p->size)
    return DC_REFUSE_SIZE;
  if (h->lanes != lanes)
    return DC_REFUSE_LANES;
  int unix_twin = l >= A->nl;
  if (h->rank >= (uint32_t)p->size || !dc_plan_accepts(p, (int)h->rank) ||
      h->lane >= lanes ||
      dc_plan_listener(p, (int)h->rank, (int)h->lane) != l % A->nl ||
      (unix_twin && !dc_plan_local(p, (int)h->rank, (int)h->lane)) ||
      dc_engine_connected(A->t, (int)h->rank, (int)h->lane))
    return DC_REFUSE_RANK;
  if (!A->auth->on && !dc_plan_source_ok(p, (int)h->rank, fd))
    return DC_REFUSE_SOURCE;
  return DC_REFUSE_NONE;
}

static int join(acceptor *A, pending *pd) {
  const dc_engine_plan *p = A->p;
  const dc_hello *h = &pd->h;
  if (dc_engine_connected(A->t, (int)h->rank, (int)h->lane)) /* proved first */
    return refuse(A, pd, "rank and connection number already connected");
  dc_seal *seal = NULL;
  if (A->auth->secure && !(seal = dc_seal_new(A->auth, &pd->bind, 0)))
    return refuse(A, pd, "out of memory for its frame keys");
  if (h->host != p->host)
    dc_sock_keepalive(pd->fd);
  dc_engine_attach(A->t, (int)h->rank, (int)h->lane, pd->fd,
                   pd->listener >= A->nl, h->host,
                   dc_plan_addr(p, (int)h->rank, (int)h->lane)->text);
  dc_engine_seal(A->t, (int)h->rank, (int)h->lane, seal);
  dc_engine_log(A->t, "accepted rank %u lane %u from %s%s", h->rank, h->lane,
                pd->from,
                A->auth->secure ? " (job token proven, frames "
                                  "authenticated)"
                : A->auth->on   ? " (job token proven)"
                                : "");
  pd->fd = -1;
  A->want--;
  return 1;
}

/* Answer a good hello: OK, and with a token our nonce and proof. A fresh
 * socket's send buffer takes these few bytes at once: no wait. */
static int answer(acceptor *A, pending *pd) {
  const dc_engine_plan *p = A->p;
  dc_hello r = dc_engine_hello(p, A->auth, DC_HELLO_OK, (int)pd->h.lane);
  unsigned char b[DC_HELLO_BYTES + DC_PROOF_BYTES], mac[DC_AUTH_PROOF_BYTES];
  size_t n = DC_HELLO_BYTES;
  dc_hello_encode(&r, b);
  if (A->auth->on) {
    pd->bind = (dc_auth_bind){.job = p->job,
                              .group = p->group,
                              .connector = pd->h.rank,
                              .acceptor = (uint32_t)p->rank,
                              .size = (uint32_t)p->size,
                              .lane = pd->h.lane,
                              .host_c = pd->h.host,
                              .host_a = r.host,
                              .flags_c = pd->h.flags,
                              .flags_a = r.flags};
    memcpy(pd->bind.nonce_c, pd->h.nonce, DC_AUTH_NONCE_BYTES);
    memcpy(pd->bind.nonce_a, r.nonce, DC_AUTH_NONCE_BYTES);
    dc_auth_prove(A->auth, &pd->bind, DC_AUTH_BY_ACCEPTOR, mac);
    dc_proof_encode(mac, b + n);
    n += DC_PROOF_BYTES;
  }
  if (dc_sock_write_all(pd->fd, b, n, dc_now() + 1.0) != DC_OK)
    return refuse(A, pd, "it closed the connection before our answer");
  if (!A->auth->on)
    return join(A, pd);
  pd->proving = 1;
  pd->have = 0;
  return 0;
}

/* Tell pd why it is refused, and only why: no job id, size, host key or
 * nonce for a stranger to reuse. With a token the refusal carries a MAC
 * over the hello it answers (handshake.h), so the dialer can tell it from
 * a stranger's forgery; without one nothing can be proven. */
static int refuse_hello(acceptor *A, pending *pd, uint32_t reason) {
  char why[160];
  dc_hello r = {
      .kind = DC_HELLO_REFUSED, .version = DC_WIRE_VERSION, .reason = reason};
  unsigned char b[DC_HELLO_BYTES + DC_PROOF_BYTES];
  dc_hello_encode(&r, b);
  size_t n = DC_HELLO_BYTES;
  if (A->auth->on) { /* a MAC, so the dialer believes only real refusals */
    unsigned char m[DC_REFUSAL_MSG_BYTES], mac[DC_AUTH_PROOF_BYTES];
    dc_refusal_msg(b, pd->buf, (uint32_t)A->p->rank, m);
    dc_auth_mac(A->auth, DC_REFUSAL_LABEL, m, sizeof m, mac);
    dc_proof_encode(mac, b + n);
    n += DC_PROOF_BYTES;
  }
  dc_sock_write_all(pd->fd, b, n, dc_now() + 1.0); /* best effort */
  int w = snprintf(why, sizeof why, "claims rank %u lane %u: ", pd->h.rank,
                   pd->h.lane);
  if (reason == DC_REFUSE_LANES) /* say both counts: which rank is off */
    snprintf(why + w, sizeof why - (size_t)w,
             "it makes %u connection(s) per pair, this rank %d (set "
             "DISTCOMM_SOCKETS alike on every rank)",
             pd->h.lanes, dc_plan_lanes(A->p));
  else
    snprintf(why + w, sizeof why - (size_t)w, "%s",
             dc_hello_reason_text(reason));
  return refuse(A, pd, why);
}

static int hello_step(acceptor *A, pending *pd) {
  uint32_t v = 0;
  char why[160];
  dc_status st = dc_hello_peek(pd->buf, pd->have, &v);
  if (st == DC_ERR_AUTH)
    return refuse(A, pd, "it sent bytes that are not a distcomm hello");
  if (st != DC_OK) {
    snprintf(why, sizeof why,
             "it speaks distcomm protocol version %u, this "
             "rank %u",
             (unsigned)v, DC_WIRE_VERSION);
    return refuse(A, pd, why);
  }
  if (pd->have < DC_HELLO_BYTES)
    return 0;
  if (dc_hello_decode(pd->buf, &pd->h) != DC_OK)
    return refuse(A, pd, "its hello failed its check (corrupt or forged)");
  uint32_t reason = judge(A, &pd->h, pd->listener, pd->fd);
  if (reason == DC_REFUSE_NONE)
    return answer(A, pd);
  return refuse_hello(A, pd, reason);
}

static int proof_step(acceptor *A, pending *pd) {
  unsigned char mac[DC_AUTH_PROOF_BYTES];
  if (dc_proof_decode(pd->buf, mac) != DC_OK ||
      !dc_auth_verify(A->auth, &pd->bind, DC_AUTH_BY_CONNECTOR, mac))
    return refuse(A, pd,
                  "it did not prove the job token (wrong "
                  "DISTCOMM_JOB_TOKEN: another job, or a stranger)");
  return join(A, pd);
}

static const char *closed_why(const pending *pd) {
  if (pd->proving)
    return "it closed the connection instead of proving the job token (has "
           "it another DISTCOMM_JOB_TOKEN?)";
  return pd->have ? "it closed the connection in the middle of a hello"
                  : "it closed the connection without a hello (a port scan?)";
}

/* Read what pd has sent; 1 when it joined the group. */
static int step(acceptor *A, pending *pd) {
  size_t need = pd->proving ? DC_PROOF_BYTES : DC_HELLO_BYTES;
  ssize_t r = recv(pd->fd, pd->buf + pd->have, need - pd->have, MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (r <= 0)
    return refuse(A, pd, closed_why(pd));
  pd->have += (size_t)r;
  if (!pd->proving)
    return hello_step(A, pd);
  return pd->have == need ? proof_step(A, pd) : 0;
}

/* A free slot. When all are in flight, one that has hung on for a while
 * gives way (a real peer answers in milliseconds; those that said nothing
 * go first, then the oldest); otherwise NULL, and newcomers wait in the
 * listen backlog. Called only when a connection waits, so nobody is
 * dropped for nothing. One we answered is not dropped for room: its dialer
 * has sent (or is sending) its proof and counts the connection as made, so
 * dropping it would fail the dialer later instead of making it dial again
 * (hundreds of ranks on two cores take longer than CROWDED_SECONDS to send
 * their proofs); a stranger that cannot prove still leaves after
 * HELLO_SECONDS. */
static pending *slot(acceptor *A) {
  pending *old = NULL;
  double now = dc_now();
  for (int i = 0; i < PENDING_MAX; i++) {
    pending *pd = &A->q[i];
    if (pd->fd < 0)
      return pd;
    if (now - pd->since < CROWDED_SECONDS || pd->proving)
      continue;
    if (!old || (pd->have == 0 && old->have != 0) ||
        ((pd->have == 0) == (old->have == 0) && pd->since < old->since))
      old = pd;
  }
  if (!old)
    return NULL;
  refuse(A, old,
         "dropped to make room: too many connections at once "
         "without a handshake");
  return old;
}

/* Listener l's fd: a TCP one, or (l >= nl) a Unix twin; -1 for none. */
static int listener_fd(const acceptor *A, int l) {
  if (l < A->nl)
    return A->p->listen_fds[l];
  return A->p->twin_fds ? A->p->twin_fds[l - A->nl] : -1;
}

static int waiting(int lfd) {
  struct pollfd p = {.fd = lfd, .events = POLLIN};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* Take the connections waiting on listener l, and read any hello that is
 * already there. */
static void take(acceptor *A, int l) {
  int lfd = listener_fd(A, l);
  for (int n = 0; n < PENDING_MAX && waiting(lfd); n++) {
    int fd;
    char from[64], err[128];
    pending *pd = slot(A);
    if (!pd)
      A->full = 1;
    if (!pd || dc_sock_accept(lfd, dc_now(), &fd, from, sizeof from, err,
                              sizeof err) != DC_OK)
      return;
    *pd = (pending){.fd = fd, .listener = l, .since = dc_now()};
    snprintf(pd->from, sizeof pd->from, "%s", from);
    step(A, pd);
  }
}

static void expire(acceptor *A) {
  double now = dc_now();
  for (int i = 0; i < PENDING_MAX; i++) {
    pending *pd = &A->q[i];
    char why[80];
    if (pd->fd < 0 || now - pd->since <= HELLO_SECONDS)
      continue;
    snprintf(why, sizeof why, "it sent %s within %.0f s",
             pd->proving ? "no proof of the job token"
             : pd->have  ? "only part of a hello"
                         : "nothing",
             HELLO_SECONDS);
    refuse(A, pd, why);
  }
}

static int first_missing(const dc_engine *t, const dc_engine_plan *p) {
  for (int q = 0; q < p->size; q++)
    for (int l = 0; dc_plan_accepts(p, q) && l < dc_plan_lanes(p); l++)
      if (!dc_engine_connected(t, q, l))
        return q;
  return -1;
}

static dc_status timed_out(const acceptor *A, char *err, size_t errlen) {
  const dc_engine_plan *p = A->p;
  int q = first_missing(A->t, p);
  snprintf(err, errlen,
           "rank %d timed out after %.0f s waiting for rank %d "
           "(%s) to connect: is rank %d running?%s%s%s",
           p->rank, dc_engine_timeout(A->t), q, dc_plan_addr(p, q, 0)->text, q,
           A->refused[0] ? " (the last connection refused: " : "", A->refused,
           A->refused[0] ? ")" : "");
  return DC_ERR_TIMEOUT;
}

/* Set-up has waited a while for a rank to connect: say which. */
static void note_missing(const acceptor *A, const dc_waiting *w,
                         double deadline) {
  const dc_engine_plan *p = A->p;
  int q = first_missing(A->t, p);
  fprintf(stderr,
          "[distcomm rank %d] set-up: waiting for rank %d (%s) to connect "
          "(%d connection(s) to come), after %.0f s (the timeout ends it in "
          "%.0f s)\n",
          p->rank, q, dc_plan_addr(p, q, 0)->text, A->want, dc_waiting_for(w),
          deadline - dc_now());
}

/* One round: poll listeners and handshakes, serve what is ready. While
 * every slot is taken (A->full), a waiting connection would wake the poll
 * at once, round after round: the listeners sit out, and are looked at
 * again after a handshake moved or FULL_PAUSE_MS, when a slot may have
 * freed or aged. */
#define FULL_PAUSE_MS 20
static void round_once(acceptor *A, double left) {
  struct pollfd pf[2 * LISTEN_MAX + PENDING_MAX];
  int map[PENDING_MAX], nl = 2 * A->nl, n = nl, full = A->full;
  A->full = 0;
  for (int l = 0; l < nl; l++) { /* poll() skips a negative fd */
    pf[l] =
        (struct pollfd){.fd = full ? -1 : listener_fd(A, l), .events = POLLIN};
  }
  for (int i = 0; i < PENDING_MAX; i++)
    if (A->q[i].fd >= 0) {
      map[n - nl] = i;
      pf[n++] = (struct pollfd){.fd = A->q[i].fd, .events = POLLIN};
    }
  int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
  poll(pf, (nfds_t)n, full && ms > FULL_PAUSE_MS ? FULL_PAUSE_MS : ms);
  for (int i = nl; i < n; i++) /* before take(): it may reuse slots */
    if (pf[i].revents)
      step(A, &A->q[map[i - nl]]);
  for (int l = 0; l < nl; l++)
    if (full || (pf[l].revents & POLLIN)) /* take() skips a missing twin */
      take(A, l);
  expire(A);
}

dc_status dc_engine_accept_all(dc_engine *t, const dc_engine_plan *p,
                               const dc_auth *auth, double deadline, char *err,
                               size_t errlen) {
  /* at most LISTEN_MAX listeners: the hostfile's limit */
  acceptor A = {.t = t, .p = p, .auth = auth, .nl = dc_plan_nlisten(p)};
  for (int i = 0; i < PENDING_MAX; i++)
    A.q[i].fd = -1;
  for (int q = 0; q < p->size; q++)
    A.want += dc_plan_accepts(p, q) * dc_plan_lanes(p);
  dc_status st = DC_OK;
  dc_waiting w = dc_waiting_start();
  while (A.want > 0 && st == DC_OK) {
    double left = deadline - dc_now();
    if (left <= 0)
      st = timed_out(&A, err, errlen);
    else
      round_once(&A, left);
    if (st == DC_OK && A.want > 0 && p->abandon &&
        p->abandon(p->abandon_arg, err, errlen))
      st = DC_ERR_PEER_LOST;
    if (A.want > 0 && st == DC_OK && dc_waiting_due(&w))
      note_missing(&A, &w, deadline);
  }
  for (int i = 0; i < PENDING_MAX; i++)
    if (A.q[i].fd >= 0)
      refuse(&A, &A.q[i], "set-up ended before it finished a handshake");
  return st;
}
