/* dc_group_shrink on the native group (issue 37): the ranks still alive
 * meet again on the listeners the group kept, agree on who is left
 * (core/agree.h), and connect a group of their own on fresh listeners
 * whose addresses go over the agreement's sockets, as split's do. A killed
 * rank's listener is gone: dialing it is refused at once, which is what
 * makes the shrink fast after a kill. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "core/agree.h"
#include "transport/auth.h"
#include "transport/frame.h"
#include "transport/sock.h"

void ring_keep_listeners(dc_group *g, int *fds, int n, const dc_addr *addrs,
                         int naddrs) {
  ring_impl *R = g->impl;
  R->kept_fds = malloc(sizeof *fds * (size_t)n);
  R->world = malloc(sizeof *R->world * (size_t)g->size);
  if (!R->kept_fds || !R->world) { /* the group works, but cannot shrink */
    for (int i = 0; i < n; i++)
      close(fds[i]);
    free(R->kept_fds);
    free(R->world);
    R->kept_fds = NULL;
    R->world = NULL;
    return;
  }
  memcpy(R->kept_fds, fds, sizeof *fds * (size_t)n);
  R->nkept = n;
  for (int r = 0; r < g->size; r++)
    R->world[r] = addrs[r * naddrs];
}

/* ---- meeting: one greeted socket per live peer ------------------------ */

/* The hello both ends send: "DCSH", from, to, size, job, group id, the
 * rank the sender's failed op found silent (-1 none), the sender's nonce
 * (the agreement's MACs cover both ends'), and a MAC of those under the
 * job token (zeros without one: then, as at set-up, the job id is what
 * keeps strangers out). */
#define SHRINK_LABEL "distcomm shrink"
enum {
  HELLO_FIXED = 32, /* what both ends write alike */
  HELLO_BODY = 36 + DC_AUTH_NONCE_BYTES,
  HELLO_BYTES = HELLO_BODY + DC_AUTH_PROOF_BYTES
};

/* A rank a failed op found silent has had the timeout already: it gets
 * this long more to greet, not a second timeout (issue 37: a silent rank
 * left out within the timeout + 1 s). */
#define SILENT_GRACE 0.5

typedef struct meet {
  dc_group *g;
  ring_impl *R;
  dc_auth auth;
  int *fds;              /* per peer: greeted, else -1 */
  int *wait;             /* per peer: dialed, its reply awaited, else -1 */
  char *dead;            /* per peer: refused, closed or bad */
  double *by;            /* per peer: greeted by then, or suspected */
  int silent;            /* the rank our failed op found silent, or -1 */
  unsigned char *nonces; /* per rank, mine included (dc_agree_seal) */
  dc_agree_seal seal;
  double deadline;
} meet;

static void hello(const meet *M, int from, int to, unsigned char *b) {
  memcpy(b, "DCSH", 4);
  dc_put32(b + 4, (uint32_t)from);
  dc_put32(b + 8, (uint32_t)to);
  dc_put32(b + 12, (uint32_t)M->g->size);
  dc_put64(b + 16, M->R->job);
  dc_put64(b + 24, M->g->id);
  dc_put32(b + 32, (uint32_t)M->silent);
  memcpy(b + 36, M->nonces + (size_t)from * DC_AUTH_NONCE_BYTES,
         DC_AUTH_NONCE_BYTES);
  dc_auth_mac(&M->auth, SHRINK_LABEL, b, HELLO_BODY, b + HELLO_BODY);
}

/* A rank found silent, by us or a peer: greeted soon, or suspected. */
static void silent_hint(meet *M, int p) {
  double soon = dc_now() + SILENT_GRACE;
  if (p >= 0 && p < M->g->size && p != M->g->rank && M->fds[p] < 0 &&
      soon < M->by[p])
    M->by[p] = soon;
}

/* The sender of a good hello to me, or -1; its silent rank is a hint. */
static int hello_from(meet *M, const unsigned char *b) {
  unsigned char want[HELLO_BYTES];
  int from = (int)dc_get32(b + 4);
  if (from < 0 || from >= M->g->size || from == M->g->rank)
    return -1;
  hello(M, from, M->g->rank, want);
  if (memcmp(b, want, HELLO_FIXED) != 0)
    return -1;
  if (M->auth.on &&
      !dc_auth_mac_ok(&M->auth, SHRINK_LABEL, b, HELLO_BODY, b + HELLO_BODY))
    return -1;
  silent_hint(M, (int)dc_get32(b + 32));
  return from;
}

/* p greeted on fd: its nonce (hello b) kept for the agreement's MACs. */
static void greeted(meet *M, int p, int fd, const unsigned char *b) {
  M->fds[p] = fd;
  memcpy(M->nonces + (size_t)p * DC_AUTH_NONCE_BYTES, b + 36,
         DC_AUTH_NONCE_BYTES);
}

/* One connect without retry: 1 connected, 0 refused or failed (the peer's
 * listener is gone), -1 no answer by the deadline. */
static int dial_once(const dc_addr *a, double deadline, int *fd) {
  *fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (*fd < 0)
    return 0;
  int r = connect(*fd, (const struct sockaddr *)&a->sa, a->salen);
  if (r != 0 && errno == EINPROGRESS) {
    double left = deadline - dc_now();
    struct pollfd p = {.fd = *fd, .events = POLLOUT};
    int ready = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
    int e = 0;
    socklen_t el = sizeof e;
    if (ready <= 0) {
      close(*fd);
      return -1;
    }
    r = getsockopt(*fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0 ? 0 : -1;
  }
  if (r != 0) {
    close(*fd);
    return 0;
  }
  return 1;
}

/* Dial every higher rank not dialed yet and say hello; its reply comes in
 * the loop. A rank whose host does not answer within `each` seconds (or
 * its silent grace) is dialed again on the next turn: one lost host must
 * not hold up the others (who would then wait for our replies). */
static void dial_higher(meet *M, double each) {
  unsigned char b[HELLO_BYTES];
  for (int p = M->g->rank + 1; p < M->g->size; p++) {
    int fd;
    if (M->wait[p] >= 0 || M->fds[p] >= 0 || M->dead[p])
      continue;
    double by = dc_now() + each < M->by[p] ? dc_now() + each : M->by[p];
    int r = dial_once(&M->R->world[p], by, &fd);
    if (r <= 0) {
      M->dead[p] = r == 0;
      continue;
    }
    hello(M, M->g->rank, p, b);
    if (dc_sock_write_all(fd, b, HELLO_BYTES, M->deadline) != DC_OK) {
      close(fd);
      M->dead[p] = 1;
      continue;
    }
    M->wait[p] = fd;
  }
}

/* A lower rank not heard from yet: is its listener still there? A probe
 * that connects is closed at once (the peer drops it as a hello-less
 * connection). */
static void probe_lower(meet *M) {
  for (int p = 0; p < M->g->rank; p++) {
    int fd;
    if (M->fds[p] >= 0 || M->dead[p])
      continue;
    int r = dial_once(&M->R->world[p], dc_now() + 0.05, &fd);
    if (r == 1)
      close(fd);
    else if (r == 0)
      M->dead[p] = 1;
  }
}

/* A connection on a kept listener: a lower rank's hello gets our reply;
 * anything else (a probe, a stranger, a late duplicate) is closed. */
static void take(meet *M, int lfd) {
  int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  unsigned char b[HELLO_BYTES], mine[HELLO_BYTES];
  if (fd < 0)
    return;
  double by = dc_now() + 1.0 < M->deadline ? dc_now() + 1.0 : M->deadline;
  int p =
      dc_sock_read_all(fd, b, HELLO_BYTES, by) == DC_OK ? hello_from(M, b) : -1;
  if (p < 0 || p > M->g->rank || M->fds[p] >= 0 || M->dead[p]) {
    if (p < 0)
      dc_log(M->g, "shrink: refused a connection without a good hello");
    close(fd);
    return;
  }
  hello(M, M->g->rank, p, mine);
  if (dc_sock_write_all(fd, mine, HELLO_BYTES, M->deadline) != DC_OK) {
    close(fd);
    M->dead[p] = 1;
    return;
  }
  greeted(M, p, fd, b);
}

/* A higher rank's reply: greeted, or dead. */
static void replied(meet *M, int p) {
  unsigned char b[HELLO_BYTES];
  int fd = M->wait[p];
  M->wait[p] = -1;
  if (dc_sock_read_all(fd, b, HELLO_BYTES, M->deadline) == DC_OK &&
      hello_from(M, b) == p) {
    greeted(M, p, fd, b);
    return;
  }
  close(fd);
  M->dead[p] = 1;
}

/* Peers not greeted by their time (a silent one's grace) are suspects. */
static int met_all(meet *M) {
  int all = 1;
  double now = dc_now();
  for (int p = 0; p < M->g->size; p++) {
    if (p == M->g->rank || M->fds[p] >= 0 || M->dead[p])
      continue;
    if (now < M->by[p]) {
      all = 0;
      continue;
    }
    dc_log(M->g, "shrink: rank %d (%s) found silent, not greeted: a suspect", p,
           M->R->world[p].text);
    if (M->wait[p] >= 0)
      close(M->wait[p]);
    M->wait[p] = -1;
    M->dead[p] = 1;
  }
  return all;
}

/* One poll over the kept listeners and the dialed sockets (50 ms). */
static void step(meet *M, struct pollfd *pf) {
  int n = 0;
  for (int i = 0; i < M->R->nkept; i++)
    pf[n++] = (struct pollfd){.fd = M->R->kept_fds[i], .events = POLLIN};
  for (int p = 0; p < M->g->size; p++)
    pf[n++] = (struct pollfd){.fd = M->wait[p], .events = POLLIN};
  if (poll(pf, (nfds_t)n, 50) <= 0)
    return;
  for (int i = 0; i < M->R->nkept; i++)
    if (pf[i].revents)
      take(M, pf[i].fd);
  for (int p = 0; p < M->g->size; p++)
    if (M->wait[p] >= 0 && pf[M->R->nkept + p].revents)
      replied(M, p);
}

/* Until every peer is greeted or dead, or the deadline: then the rest are
 * suspects (silent), their sockets closed. */
static dc_status meet_all(meet *M) {
  struct pollfd *pf = calloc((size_t)(M->R->nkept + M->g->size), sizeof *pf);
  if (!pf)
    return DC_ERR_NOMEM;
  for (int p = 0; p < M->g->size; p++)
    M->by[p] = M->deadline;
  silent_hint(M, M->silent);
  dial_higher(M, 1.0);
  double probe = 0, gap = 0.1;
  while (!met_all(M) && dc_now() < M->deadline) {
    if (dc_now() >= probe) { /* backing off to 1 s: a slow peer's queue */
      probe_lower(M);
      dial_higher(M, 0.05);
      probe = dc_now() + gap;
      gap = gap < 0.5 ? gap * 2 : 1.0;
    }
    step(M, pf);
  }
  for (int p = 0; p < M->g->size; p++) {
    if (M->wait[p] >= 0)
      close(M->wait[p]);
    M->wait[p] = -1;
    if (p != M->g->rank && M->fds[p] < 0)
      M->dead[p] = 1;
  }
  free(pf);
  return DC_OK;
}

/* ---- the new group ---------------------------------------------------- */

/* Its id: the old one mixed with the attempt and the members (splitmix64
 * steps), so that a rank holding another membership, or a connection left
 * from a failed attempt, is refused at hello. */
static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

static uint64_t new_id(uint64_t old, int attempt, const int *ranks, int n) {
  uint64_t h = mix(mix(old, 0x5348524eull), (uint64_t)attempt); /* "SHRN" */
  for (int i = 0; i < n; i++)
    h = mix(h, (uint64_t)ranks[i]);
  return h;
}

static void port0(dc_addr *a) {
  if (a->sa.ss_family == AF_INET6)
    ((struct sockaddr_in6 *)&a->sa)->sin6_port = 0;
  else
    ((struct sockaddr_in *)&a->sa)->sin_port = 0;
}

typedef struct fresh {
  int n, me;     /* members, my new rank */
  int *ranks;    /* old rank of each member */
  int nmine;     /* my fresh addresses: naddrs, or (the mesh) n * naddrs */
  dc_addr *mine; /* them (the mesh: towards each member, as R->self) */
  int *lfds;     /* their listeners (the mesh: one per distinct address) */
  int nlfds;
  int *which;  /* the mesh: the listener of each of mine (dc_engine_plan) */
  char *texts; /* every member's address slots */
  dc_addr *addrs;
} fresh;

static void fresh_free(fresh *F) {
  for (int i = 0; F->lfds && i < F->nlfds; i++)
    if (F->lfds[i] >= 0)
      close(F->lfds[i]);
  free(F->ranks);
  free(F->mine);
  free(F->lfds);
  free(F->which);
  free(F->texts);
  free(F->addrs);
}

/* The mesh: my address towards each member is the one I had towards it
 * (towards myself: any, never dialed), each distinct one listened on once. */
static dc_status listen_mesh(ring_impl *R, fresh *F, char *err, size_t errlen) {
  int L = R->naddrs;
  for (int i = 0; i < F->nmine; i++) {
    int j = i / L, k = i % L;
    int peer = F->ranks[j == F->me ? (F->me + 1) % F->n : j];
    F->mine[i] = R->self[peer * L + k];
    port0(&F->mine[i]);
  }
  return ring_listen_each(F->mine, F->nmine, F->lfds, &F->nlfds, F->which, err,
                          errlen);
}

static dc_status listen_fresh(ring_impl *R, fresh *F, char *err,
                              size_t errlen) {
  if (R->per_peer)
    return listen_mesh(R, F, err, errlen);
  for (int i = 0; i < F->nmine; i++) {
    char why[160];
    F->mine[i] = R->self[i];
    port0(&F->mine[i]);
    F->lfds[i] = -1;
    F->nlfds = i + 1;
    if (dc_sock_listen(&F->mine[i], &F->lfds[i], why, sizeof why) != DC_OK) {
      snprintf(err, errlen, "%s", why);
      return DC_ERR_SYSTEM;
    }
  }
  return DC_OK;
}

/* Read past member p's agreement messages to its decision (unless the
 * agreement read it), then its address slots. */
static dc_status read_slots(const meet *M, const dc_agree *a, int p, char *slot,
                            size_t block, char *err, size_t errlen) {
  size_t len = dc_agree_msg_bytes(a->size);
  size_t wire = dc_agree_wire_bytes(a->size, &M->seal);
  unsigned char *m = malloc(wire);
  int same = dc_agree_told(a, p);
  dc_status st = m ? DC_OK : DC_ERR_NOMEM;
  while (st == DC_OK && !same) {
    st = dc_sock_read_all(M->fds[p], m, wire, M->deadline);
    if (st == DC_OK)
      st = dc_agree_unseal(&M->seal, p, a->me, m, len, err, errlen);
    if (st == DC_OK)
      st = dc_agree_decision(a, p, m, len, &same, err, errlen);
  }
  free(m);
  if (st == DC_OK)
    st = dc_sock_read_all(M->fds[p], slot, block, M->deadline);
  if (st != DC_OK && !err[0])
    snprintf(err, errlen, "rank %d (%s) was lost during the shrink (%s)", p,
             M->R->world[p].text, dc_strerror(st));
  return st == DC_OK || st == DC_ERR_TIMEOUT || st == DC_ERR_AUTH
             ? st
             : DC_ERR_PEER_LOST;
}

/* Every member's fresh addresses, over the agreement's sockets. Each
 * live member's block is read even after one failed, so that the streams
 * stay in step for the confirming agreement that follows. */
static dc_status swap_slots(const meet *M, const dc_agree *a, fresh *F,
                            char *err, size_t errlen) {
  size_t block = (size_t)F->nmine * RING_ADDR_SLOT;
  char *own = F->texts + (size_t)F->me * block;
  dc_status first = DC_OK;
  for (int l = 0; l < F->nmine && F->mine[l].text[0]; l++)
    snprintf(own + (size_t)l * RING_ADDR_SLOT, RING_ADDR_SLOT, "%s",
             F->mine[l].text);
  for (int i = 0; i < F->n; i++)
    if (i != F->me &&
        dc_sock_write_all(M->fds[F->ranks[i]], own, block, M->deadline) !=
            DC_OK &&
        first == DC_OK) {
      snprintf(err, errlen, "rank %d (%s) was lost during the shrink",
               F->ranks[i], M->R->world[F->ranks[i]].text);
      first = DC_ERR_PEER_LOST;
    }
  for (int i = 0; i < F->n; i++) {
    char why[256] = "";
    if (i == F->me)
      continue;
    dc_status st = read_slots(M, a, F->ranks[i], F->texts + (size_t)i * block,
                              block, why, sizeof why);
    if (st != DC_OK && first == DC_OK) {
      snprintf(err, errlen, "%s", why);
      first = st;
    }
  }
  char why[160];
  if (first == DC_OK && ring_parse_slots(F->texts, F->n * F->nmine, F->addrs,
                                         why, sizeof why) != DC_OK) {
    snprintf(err, errlen, "a survivor sent a bad address: %s", why);
    return DC_ERR_MISMATCH;
  }
  return first;
}

/* The set-up's abandon hook (dc_engine_plan): a member whose agreement
 * socket closed is dead, so waiting for it to connect is vain. */
typedef struct watch {
  const meet *M;
  const fresh *F;
} watch;

static int member_lost(void *arg, char *why, size_t whylen) {
  const watch *W = arg;
  for (int i = 0; i < W->F->n; i++) {
    int p = W->F->ranks[i];
    struct pollfd pf = {.fd = W->M->fds[p], .events = POLLRDHUP};
    if (i == W->F->me || pf.fd < 0 || poll(&pf, 1, 0) <= 0 ||
        !(pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
      continue;
    snprintf(why, whylen,
             "rank %d (%s) was lost as the survivors' group "
             "connected",
             p, W->M->R->world[p].text);
    return 1;
  }
  return 0;
}

static dc_status build_new(const meet *M, fresh *F, int attempt, dc_group **out,
                           char *err, size_t errlen) {
  ring_impl *R = M->R;
  watch W = {M, F};
  dc_engine_plan p = {.rank = F->me,
                      .size = F->n,
                      .naddrs = R->naddrs,
                      .sockets = R->sockets,
                      .addrs = F->addrs,
                      .listen_fds = F->lfds,
                      .job = R->job,
                      .group = new_id(M->g->id, attempt, F->ranks, F->n),
                      .neighbours = R->neighbours,
                      .per_peer = R->per_peer,
                      .nlisten = F->nlfds,
                      .listener = R->per_peer ? F->which : NULL,
                      .abandon = member_lost,
                      .abandon_arg = &W};
  dc_status st = ring_build(&p, F->mine, M->g->timeout_s, out, err, errlen);
  if (st != DC_OK)
    return st;
  /* the survivors' group can shrink again, on these listeners; the mesh
   * dials each member at its address towards me */
  size_t at = R->per_peer ? (size_t)F->me * (size_t)R->naddrs : 0;
  ring_keep_listeners(*out, F->lfds, F->nlfds, F->addrs + at, F->nmine);
  F->nlfds = 0;
  return DC_OK;
}

void (*dc_shrink_test_hook)(const char *point);

static void test_point(const char *point) {
  if (dc_shrink_test_hook)
    dc_shrink_test_hook(point);
}

/* The new group on a's decision. A listener that fails still swaps (empty
 * addresses: every member then fails alike), so the streams stay in step. */
static dc_status regroup(const meet *M, const dc_agree *a, int attempt,
                         dc_group **out, char *err, size_t errlen) {
  /* sized for every old rank: the members are not known yet */
  int na = M->R->naddrs * (M->R->per_peer ? a->size : 1);
  fresh F = {0};
  F.ranks = calloc((size_t)a->size, sizeof *F.ranks);
  F.mine = calloc((size_t)na, sizeof *F.mine);
  F.lfds = calloc((size_t)na, sizeof *F.lfds);
  F.which = calloc((size_t)na, sizeof *F.which);
  F.texts = calloc((size_t)a->size, (size_t)na * RING_ADDR_SLOT);
  F.addrs = calloc((size_t)a->size * (size_t)na, sizeof *F.addrs);
  dc_status st = DC_ERR_NOMEM, sw;
  if (F.ranks && F.mine && F.lfds && F.which && F.texts && F.addrs) {
    F.n = dc_agree_members(a, F.ranks, &F.me);
    F.nmine = M->R->naddrs * (M->R->per_peer ? F.n : 1);
    st = listen_fresh(M->R, &F, err, errlen);
    if (st != DC_OK)
      memset(F.mine, 0, sizeof *F.mine * (size_t)na);
    char why[512] = "";
    sw = swap_slots(M, a, &F, why, sizeof why);
    if (st == DC_OK && sw != DC_OK) {
      snprintf(err, errlen, "%s", why);
      st = sw;
    }
  }
  test_point("connect");
  if (st == DC_OK)
    st = build_new(M, &F, attempt, out, err, errlen);
  if (st == DC_ERR_NOMEM && !err[0])
    snprintf(err, errlen, "out of memory");
  fresh_free(&F);
  return st;
}

/* The second agreement, on "every member set up the new group": a member
 * whose set-up failed vetoes, a member lost meanwhile is suspected. *ok:
 * the same members and no veto, on every rank that decides; else every
 * one retries with b's members. */
static dc_status confirm(meet *M, const dc_agree *a, int built, dc_agree *b,
                         int *ok, char *err, size_t errlen) {
  *ok = 0;
  dc_status st = dc_agree_init(b, a->size, a->me);
  for (int p = 0; st == DC_OK && p < a->size; p++)
    if (dc_agree_suspects(a, p))
      dc_agree_suspect(b, p);
  if (!built)
    dc_agree_veto(b);
  int rounds = 0;
  M->seal.phase++; /* a vote of the last agreement is refused here */
  if (st == DC_OK)
    st = dc_agree_run(b, M->fds, &M->seal, M->g->timeout_s, &rounds, err,
                      errlen);
  if (st != DC_OK)
    return st;
  *ok = !b->veto &&
        memcmp(a->sus, b->sus, (size_t)a->words * sizeof *a->sus) == 0;
  dc_log(M->g, "shrink: confirmed after %d round(s): %s", rounds,
         *ok ? "every member set up" : "set-up failed, retrying");
  return DC_OK;
}

/* ---- the call --------------------------------------------------------- */

static dc_status refuse(char *err, size_t errlen) {
  snprintf(err, errlen,
           "this group kept no listeners to meet on (no memory when it "
           "was made)");
  return DC_ERR_NOT_SUPPORTED;
}

static dc_status agree(meet *M, dc_agree *a, char *err, size_t errlen) {
  for (int p = 0; p < M->g->size; p++)
    if (M->dead[p])
      dc_agree_suspect(a, p);
  int rounds = 0;
  dc_status st =
      dc_agree_run(a, M->fds, &M->seal, M->g->timeout_s, &rounds, err, errlen);
  dc_log(M->g, "shrink: agreement after %d round(s): %s", rounds,
         st == DC_OK ? "decided" : err);
  return st;
}

/* At most this many set-ups of the new group: each failed one that is
 * not a veto alone leaves a lost rank out. */
#define SHRINK_ATTEMPTS 4

/* Regroup on a's decision, then confirm; on a failed set-up every rank
 * retries with the confirmed members, so all end in one group or with the
 * same error. */
static dc_status settle(meet *M, dc_agree *a, dc_group **out, char *err,
                        size_t errlen) {
  for (int attempt = 0;; attempt++) {
    dc_group *built = NULL;
    char why[512] = "";
    M->deadline = dc_now() + M->g->timeout_s; /* the last step used it */
    dc_status bst = regroup(M, a, attempt, &built, why, sizeof why);
    if (bst == DC_OK)
      test_point("confirm");
    dc_agree b = {0};
    int ok = 0;
    dc_status st = confirm(M, a, bst == DC_OK, &b, &ok, err, errlen);
    dc_agree_free(a);
    *a = b;
    if (st == DC_OK && ok) {
      *out = built;
      return DC_OK;
    }
    dc_group_free(built);
    if (st != DC_OK)
      return st;
    if (attempt + 1 == SHRINK_ATTEMPTS) {
      snprintf(err, errlen,
               "the survivors' group could not be set up in %d attempts "
               "(ranks lost while it connected)%s%s",
               SHRINK_ATTEMPTS, why[0] ? ": " : "", why);
      return DC_ERR_PEER_LOST;
    }
    dc_log(M->g, "shrink: the new group's set-up failed (%s): again",
           why[0] ? why : "another member's");
  }
}

dc_status ring_shrink(dc_group *g, dc_group **out, char *err, size_t errlen) {
  ring_impl *R = g->impl;
  if (!R->world)
    return refuse(err, errlen);
  dc_shrink_poison(g);
  meet M = {.g = g,
            .R = R,
            .silent = R->tcp ? R->tcp->silent : -1,
            .deadline = dc_now() + g->timeout_s};
  dc_status st = dc_auth_from_env(&M.auth, err, errlen);
  if (st != DC_OK)
    return st;
  M.fds = malloc(sizeof *M.fds * (size_t)g->size);
  M.wait = malloc(sizeof *M.wait * (size_t)g->size);
  M.dead = calloc((size_t)g->size, 1);
  M.by = calloc((size_t)g->size, sizeof *M.by);
  M.nonces = calloc((size_t)g->size, DC_AUTH_NONCE_BYTES);
  M.seal = (dc_agree_seal){.auth = &M.auth, .group = g->id, .nonces = M.nonces};
  dc_agree a = {0};
  st = M.fds && M.wait && M.dead && M.by && M.nonces
           ? dc_agree_init(&a, g->size, g->rank)
           : DC_ERR_NOMEM;
  if (M.nonces)
    dc_auth_nonce(&M.auth, M.nonces + (size_t)g->rank * DC_AUTH_NONCE_BYTES);
  for (int p = 0; M.fds && M.wait && p < g->size; p++)
    M.fds[p] = M.wait[p] = -1;
  if (st == DC_OK)
    st = meet_all(&M);
  if (st == DC_OK)
    st = agree(&M, &a, err, errlen);
  if (st == DC_OK)
    st = settle(&M, &a, out, err, errlen);
  if (st == DC_ERR_NOMEM && !err[0])
    snprintf(err, errlen, "out of memory");
  for (int p = 0; M.fds && p < g->size; p++)
    if (M.fds[p] >= 0)
      close(M.fds[p]);
  dc_agree_free(&a);
  dc_auth_clear(&M.auth);
  free(M.fds);
  free(M.wait);
  free(M.dead);
  free(M.by);
  free(M.nonces);
  return st;
}
