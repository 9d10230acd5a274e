/* Connecting a group's mesh (transport/mesh.h): rank r connects to every lower
 * rank and accepts every higher one, lanes connections per pair. Connecting
 * only downwards cannot deadlock: a connect completes in the listener's backlog
 * before the lower rank gets round to accepting it. With neighbours only,
 * rank r connects to r+1 and accepts r-1; to keep the waits acyclic every
 * rank but the last accepts first (as MLX's ring does). This file dials;
 * accept.c answers. With a job token, each connection ends with the
 * two proofs of transport/auth.h. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/waiting.h"
#include "transport/handshake.h"
#include "transport/shm.h"
#include "transport/sock.h"

static dc_status say(int fd, const dc_hello *h, unsigned char b[DC_HELLO_BYTES],
                     double deadline) {
  dc_hello_encode(h, b);
  return dc_sock_write_all(fd, b, DC_HELLO_BYTES, deadline);
}

static dc_status hear(int fd, dc_hello *h, unsigned char b[DC_HELLO_BYTES],
                      double deadline) {
  dc_status st = dc_sock_read_all(fd, b, DC_HELLO_BYTES, deadline);
  return st == DC_OK ? dc_hello_decode(b, h) : st;
}

/* With a token, whether a refusal came from a rank that knows it: its MAC
 * follows at once (accept.c), over the refusal and our hello as sent. A
 * stranger's forged refusal has none, or a wrong one. */
static int refusal_proven(int fd, const dc_auth *auth, int q,
                          const unsigned char mine[DC_HELLO_BYTES],
                          const unsigned char refusal[DC_HELLO_BYTES],
                          double deadline) {
  unsigned char msg[DC_PROOF_BYTES], mac[DC_AUTH_PROOF_BYTES];
  unsigned char m[DC_REFUSAL_MSG_BYTES];
  double soon = dc_now() + 1.0; /* it comes with the refusal */
  if (dc_sock_read_all(fd, msg, sizeof msg,
                       soon < deadline ? soon : deadline) != DC_OK ||
      dc_proof_decode(msg, mac) != DC_OK)
    return 0;
  dc_refusal_msg(refusal, mine, (uint32_t)q, m);
  return dc_auth_mac_ok(auth, DC_REFUSAL_LABEL, m, sizeof m, mac);
}

/* Whether the answer to our hello lets us in: refused (and why), someone
 * else's rank or job answering, or a rank that cannot prove the token. */
static dc_status check_reply(const dc_engine_plan *p, const dc_auth *auth,
                             int q, const dc_addr *a, const dc_hello *r,
                             char *err, size_t errlen) {
  if (r->kind == DC_HELLO_REFUSED) {
    snprintf(err, errlen, "rank %d (%s) refused rank %d's connection: %s", q,
             a->text, p->rank, dc_hello_reason_text(r->reason));
    return r->reason == DC_REFUSE_AUTH || r->reason == DC_REFUSE_NO_TOKEN
               ? DC_ERR_AUTH
               : DC_ERR_CONFIG;
  }
  if (r->kind != DC_HELLO_OK || r->version != DC_WIRE_VERSION ||
      r->job != p->job || r->group != p->group || r->rank != (uint32_t)q) {
    snprintf(err, errlen,
             "the process at %s is not rank %d of this job (it "
             "answered as rank %u of another job or group)",
             a->text, q, (unsigned)r->rank);
    return DC_ERR_CONFIG;
  }
  if (auth->on && !(r->flags & DC_HELLO_TOKEN)) {
    snprintf(err, errlen,
             "rank %d (%s) did not prove the job token (it has "
             "no DISTCOMM_JOB_TOKEN: start every rank through "
             "distcomm-launch, or none)",
             q, a->text);
    return DC_ERR_AUTH;
  }
  if (auth->secure != !!(r->flags & DC_HELLO_SECURE)) {
    snprintf(err, errlen,
             "rank %d (%s) answered %s DISTCOMM_SECURE, rank %d "
             "%s: set it alike on every rank",
             q, a->text, auth->secure ? "without" : "with", p->rank,
             auth->secure ? "has it" : "has not");
    return DC_ERR_CONFIG;
  }
  return DC_OK;
}

/* Check the acceptor's proof, then send ours (after, so that a stranger
 * listening on a peer's address learns nothing it could use). With
 * DISTCOMM_SECURE, *seal gets the connection's frame keys. */
static dc_status prove(int fd, const dc_engine_plan *p, const dc_auth *auth,
                       int q, int lane, const dc_hello *mine,
                       const dc_hello *reply, double deadline, dc_seal **seal) {
  dc_auth_bind b = {.job = p->job,
                    .group = p->group,
                    .connector = (uint32_t)p->rank,
                    .acceptor = (uint32_t)q,
                    .size = (uint32_t)p->size,
                    .lane = (uint32_t)lane,
                    .host_c = mine->host,
                    .host_a = reply->host,
                    .flags_c = mine->flags,
                    .flags_a = reply->flags};
  memcpy(b.nonce_c, mine->nonce, DC_AUTH_NONCE_BYTES);
  memcpy(b.nonce_a, reply->nonce, DC_AUTH_NONCE_BYTES);
  unsigned char msg[DC_PROOF_BYTES], mac[DC_AUTH_PROOF_BYTES];
  dc_status st = dc_sock_read_all(fd, msg, sizeof msg, deadline);
  if (st != DC_OK)
    return st;
  if (dc_proof_decode(msg, mac) != DC_OK ||
      !dc_auth_verify(auth, &b, DC_AUTH_BY_ACCEPTOR, mac))
    return DC_ERR_AUTH;
  dc_auth_prove(auth, &b, DC_AUTH_BY_CONNECTOR, mac);
  dc_proof_encode(mac, msg);
  if (auth->secure && !(*seal = dc_seal_new(auth, &b, 1)))
    return DC_ERR_NOMEM;
  return dc_sock_write_all(fd, msg, sizeof msg, deadline);
}

/* Set-up has waited a while for rank q: say what for. */
static void note_wait(const dc_engine_plan *p, int q, const dc_addr *a,
                      const dc_waiting *w, double deadline, const char *what) {
  fprintf(stderr,
          "[distcomm rank %d] set-up: waiting for rank %d (%s) %s, after "
          "%.0f s (the timeout ends it in %.0f s)\n",
          p->rank, q, a->text, what, dc_waiting_for(w), deadline - dc_now());
}

/* Until the peer's answer is readable (or the deadline), with a line now
 * and then: a peer stopped after the rendezvous accepts (the kernel
 * does) but never answers. */
static void await_reply(int fd, const dc_engine_plan *p, int q,
                        const dc_addr *a, double deadline) {
  dc_waiting w = dc_waiting_start();
  for (;;) {
    double now = dc_now(), until = dc_waiting_until(&w, deadline);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (now >= deadline || poll(&pf, 1, (int)((until - now) * 1000) + 1) > 0)
      return;
    if (dc_waiting_due(&w))
      note_wait(p, q, a, &w, deadline,
                "to answer our hello (is it stopped or stuck?)");
  }
}

/* Hello, answer, proofs on a connected socket. With a token, a refusal
 * that does not prove it is not believed: *unproven gets its claimed
 * reason (else stays -1) and the caller dials again (connect_one). */
static dc_status handshake(int fd, const dc_engine_plan *p, const dc_auth *auth,
                           int q, int lane, double deadline, dc_hello *reply,
                           dc_seal **seal, int *unproven, char *err,
                           size_t errlen) {
  const dc_addr *a = dc_plan_addr(p, q, lane);
  dc_hello mine = dc_engine_hello(p, auth, DC_HELLO, lane);
  unsigned char said[DC_HELLO_BYTES], heard[DC_HELLO_BYTES];
  dc_status st = say(fd, &mine, said, deadline);
  if (st == DC_OK)
    await_reply(fd, p, q, a, deadline);
  if (st == DC_OK)
    st = hear(fd, reply, heard, deadline);
  if (st == DC_ERR_AUTH) {
    snprintf(err, errlen,
             "the process at %s (rank %d's address) did not "
             "answer with a distcomm hello",
             a->text, q);
    return DC_ERR_CONFIG;
  }
  if (st == DC_OK && reply->kind == DC_HELLO_REFUSED && auth->on &&
      !refusal_proven(fd, auth, q, said, heard, deadline)) {
    *unproven = (int)reply->reason;
    return DC_ERR_AUTH;
  }
  if (st == DC_OK)
    st = check_reply(p, auth, q, a, reply, err, errlen);
  else
    snprintf(err, errlen, "rank %d (%s) did not complete the handshake: %s", q,
             a->text, dc_strerror(st));
  if (st != DC_OK || !auth->on)
    return st;
  st = prove(fd, p, auth, q, lane, &mine, reply, deadline, seal);
  if (st == DC_ERR_AUTH)
    snprintf(err, errlen,
             "rank %d (%s) did not prove the job token: "
             "DISTCOMM_JOB_TOKEN differs between the ranks (or a stranger "
             "listens there)",
             q, a->text);
  else if (st != DC_OK)
    snprintf(err, errlen,
             "rank %d (%s) did not complete the job-token "
             "handshake: %s",
             q, a->text, dc_strerror(st));
  return st;
}

/* Each try's end: with an abandon hook, 0.1 s, so that it is asked. */
static double dial_until(const dc_engine_plan *p, const dc_waiting *w,
                         double deadline) {
  double until = dc_waiting_until(w, deadline), soon = dc_now() + 0.1;
  return p->abandon && soon < until ? soon : until;
}

/* Same-host pairs dial the Unix socket beside the peer's TCP listener
 * first: less than half the CPU of a TCP connection
 * (bench/scale/many-ranks.md), and the peer's pid comes with it (setup_shm.c).
 * Where nobody listens there, the TCP address (dc_sock_connect_via). */
static dc_status dial(dc_engine *t, const dc_engine_plan *p, int q, int lane,
                      double deadline, int *fd, int *unix_sock, char *err,
                      size_t errlen) {
  const dc_addr *a = dc_plan_addr(p, q, lane);
  dc_addr twin;
  int local = dc_plan_local(p, q, lane) && dc_shm_enabled();
  if (local)
    dc_sock_unix_twin(a, &twin);
  dc_waiting w = dc_waiting_start();
  dc_status st;
  while ((st = dc_sock_connect_via(local ? &twin : NULL, a,
                                   dial_until(p, &w, deadline), fd, unix_sock,
                                   err, errlen)) == DC_ERR_TIMEOUT &&
         dc_now() < deadline) {
    if (p->abandon && p->abandon(p->abandon_arg, err, errlen))
      return DC_ERR_PEER_LOST;
    if (dc_waiting_due(&w))
      note_wait(p, q, a, &w, deadline, "to listen (is it running?)");
  }
  if (st != DC_OK) {
    int far = p->size > 2 && !dc_plan_neighbours_only(p) &&
              q != (p->rank + 1) % p->size &&
              q != (p->rank + p->size - 1) % p->size;
    snprintf(err, errlen,
             "rank %d could not connect to rank %d (%s) before "
             "the timeout (%.0f s): is rank %d running?%s",
             p->rank, q, a->text, dc_engine_timeout(t), q,
             far ? " (if only ring neighbours are linked, as on a ring of "
                   "direct cables, set DISTCOMM_RING_NEIGHBOURS=1)"
                 : "");
  }
  return st;
}

/* An acceptor crowded by strangers may drop our connection before it
 * answers (accept.c, slot()): dial again a few times, each redial
 * bounded, so a dead acceptor still fails fast. A refusal that does not
 * prove our token (a stranger's forgery, or a rank with another token or
 * none) is not believed: dialed again too, and after UNPROVEN_TRIES of
 * them set-up fails, promptly, saying the tokens differ or a stranger
 * answered. Its claimed reason is named only when it is "the accepting
 * rank has none", the one a real rank cannot prove; a forged reason never
 * becomes the error. */
#define DROP_RETRIES 4
#define UNPROVEN_TRIES 4
#define REDIAL_SECONDS 2.0

static dc_status unproven_error(const dc_engine_plan *p, int q,
                                const dc_addr *a, int claim, int n, char *err,
                                size_t errlen) {
  int none = claim == DC_REFUSE_NO_TOKEN;
  snprintf(err, errlen,
           "rank %d (%s) refused rank %d's connection %d time(s) and could "
           "not prove our job token: the tokens differ (one rank has none, "
           "or another), or a stranger answered at its address%s%s",
           q, a->text, p->rank, n, none ? "; it says: " : "",
           none ? dc_hello_reason_text((uint32_t)claim) : "");
  return DC_ERR_AUTH;
}

/* After a failed handshake: whether to dial again (then logged), and if
 * not, the error to return (err filled). */
static int again(dc_engine *t, const dc_engine_plan *p, int q, int lane,
                 dc_status *st, int claim, int *drops, int *unproven,
                 double deadline, char *err, size_t errlen) {
  const dc_addr *a = dc_plan_addr(p, q, lane);
  int late = dc_now() + REDIAL_SECONDS > deadline;
  if (claim >= 0) {
    if (++*unproven >= UNPROVEN_TRIES || late) {
      *st = unproven_error(p, q, a, claim, *unproven, err, errlen);
      return 0;
    }
    dc_engine_log(t,
                  "rank %d (%s) refused connection %d without proving the "
                  "job token (it says: %s): not believed (a stranger, or "
                  "another token), dialing again",
                  q, a->text, lane, dc_hello_reason_text((uint32_t)claim));
    return 1;
  }
  if (*st != DC_ERR_PEER_LOST || ++*drops > DROP_RETRIES || late)
    return 0;
  dc_engine_log(
      t, "rank %d (%s) dropped connection %d before answering: dialing again",
      q, a->text, lane);
  return 1;
}

static dc_status connect_one(dc_engine *t, const dc_engine_plan *p,
                             const dc_auth *auth, int q, int lane,
                             double deadline, char *err, size_t errlen) {
  const dc_addr *a = dc_plan_addr(p, q, lane);
  dc_hello reply;
  dc_seal *seal = NULL;
  int fd, unix_sock, drops = 0, unproven = 0;
  dc_status st = dial(t, p, q, lane, deadline, &fd, &unix_sock, err, errlen);
  if (st != DC_OK)
    return st;
  for (;;) {
    int claim = -1;
    st = handshake(fd, p, auth, q, lane, deadline, &reply, &seal, &claim, err,
                   errlen);
    if (st == DC_OK)
      break;
    dc_seal_free(seal);
    seal = NULL;
    close(fd);
    if (!again(t, p, q, lane, &st, claim, &drops, &unproven, deadline, err,
               errlen))
      return st;
    char again_err[256];
    if (dial(t, p, q, lane, dc_now() + REDIAL_SECONDS, &fd, &unix_sock,
             again_err, sizeof again_err) != DC_OK)
      return claim >= 0 ? unproven_error(p, q, a, claim, unproven, err, errlen)
                        : st; /* the first error says more */
  }
  if (reply.host != p->host)
    dc_sock_keepalive(fd);
  dc_engine_attach(t, q, lane, fd, unix_sock, reply.host, a->text);
  dc_engine_seal(t, q, lane, seal);
  dc_engine_log(t, "connected to rank %d lane %d at %s%s%s", q, lane, a->text,
                unix_sock ? " by its Unix socket" : "",
                auth->secure ? " (job token proven, frames authenticated)"
                : auth->on   ? " (job token proven)"
                             : "");
  return DC_OK;
}

static dc_status connect_all(dc_engine *t, const dc_engine_plan *p,
                             const dc_auth *auth, double deadline, char *err,
                             size_t errlen) {
  for (int q = 0; q < p->size; q++)
    for (int l = 0; dc_plan_dials(p, q) && l < dc_plan_lanes(p); l++) {
      dc_status st = connect_one(t, p, auth, q, l, deadline, err, errlen);
      if (st != DC_OK)
        return st;
    }
  return DC_OK;
}

static dc_status connect_and_accept(dc_engine *t, const dc_engine_plan *p,
                                    const dc_auth *auth, char *err,
                                    size_t errlen) {
  double deadline = dc_now() + dc_engine_timeout(t);
  int accept_first = dc_plan_neighbours_only(p) && p->rank < p->size - 1;
  dc_status st = accept_first
                     ? dc_engine_accept_all(t, p, auth, deadline, err, errlen)
                     : connect_all(t, p, auth, deadline, err, errlen);
  if (st != DC_OK)
    return st;
  return accept_first ? connect_all(t, p, auth, deadline, err, errlen)
                      : dc_engine_accept_all(t, p, auth, deadline, err, errlen);
}

/* Connect a group's mesh (dial.c, accept.c, setup_shm.c): dial the ranks
 * the plan says this rank dials, accept the others (refusing strangers),
 * handshake and prove the job token on each connection, then give
 * same-host peers shared-memory pipes and single copy (unless
 * DISTCOMM_SHM=0; a pair that cannot map them keeps TCP). Fills t's
 * connections. On failure err says why. */
static dc_status mesh_connect(dc_engine *t, const dc_engine_plan *p, char *err,
                              size_t errlen) {
  dc_auth auth; /* read for every group: split groups prove it too */
  err[0] = '\0';
  dc_status st = dc_auth_from_env(&auth, err, errlen);
  if (st == DC_OK)
    st = dc_plan_protected(p, auth.on, err, errlen);
  if (st != DC_OK)
    return st;
  st = connect_and_accept(t, p, &auth, err, errlen);
  dc_auth_clear(&auth);
  /* its failures go through the hooks (the owner keeps the text), err
   * stays empty for them */
  return st == DC_OK ? dc_engine_setup_shm(t, p) : st;
}

dc_status dc_engine_open(const dc_engine_hooks *h, const dc_engine_plan *p,
                         dc_engine **out, char *err, size_t errlen) {
  dc_engine *t = dc_engine_new(h, p->rank, p->size, dc_plan_lanes(p));
  *out = t;
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return DC_ERR_NOMEM;
  }
  dc_status st = p->size > 1 ? mesh_connect(t, p, err, errlen) : DC_OK;
  if (st != DC_OK) {
    *out = NULL;
    dc_engine_free(t);
  }
  return st;
}
