/* Shared memory between the ranks of a group that share a host: each rank
 * makes one segment of incoming pipes, tells its same-host peers its name
 * over the pair's connection, they map it and say so, and it is unlinked at
 * once.
 *
 * The peer learns the rank's pid from the kernel (SO_PEERCRED, not the
 * rank's word): on the pair's own Unix socket, or for a pair on TCP at an
 * abstract Unix socket the same offer names. The offer also states the
 * address of a word and its value: a peer that reads that value
 * with process_vm_readv proves single copy works that way (ptrace rules,
 * containers and seccomp may forbid it). Single copy is used when it works
 * both ways with every peer and the pipes are wired (DISTCOMM_CMA=0 turns
 * it off). Names from peers are checked (NUL within the slot, our prefix),
 * and so are the segments they name (ours alone, mode 0600). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/frame.h"
#include "transport/handshake.h"
#include "transport/shm.h"
#include "transport/sock.h"

typedef struct shm_offer {
  char name[DC_SHM_NAME_BYTES]; /* empty: no segment */
  char cred[DC_SHM_NAME_BYTES]; /* where the kernel tells our pid */
  uint64_t probe_at, probe;     /* where to read which value */
} shm_offer;

/* verdict bits, per peer; OK_FORCED: DISTCOMM_CMA=1 here */
enum { OK_PIPES = 1, OK_PULL = 2, OK_FORCED = 4 };

static volatile uint64_t probe_word;

typedef struct shm_plan {
  dc_engine *t;
  const dc_engine_plan *p;
  uint64_t *hosts;    /* every rank's host key */
  int *peers, npeers; /* this rank's same-host peers, in rank order */
} shm_plan;

/* Position of rank x among rank r's same-host peers. With neighbours only,
 * ranks know the host of their own neighbours alone, so the slots are
 * fixed: 0 for the left neighbour, 1 for the right. */
static int pos(const shm_plan *s, int r, int x) {
  if (dc_plan_neighbours_only(s->p))
    return x == s->p->size ? 2 : x == (r + 1) % s->p->size;
  int k = 0;
  for (int q = 0; q < x; q++)
    k += q != r && s->hosts[q] == s->hosts[r];
  return k;
}

static int count_local(const shm_plan *s, int r) {
  return pos(s, r, s->p->size);
}

/* One round over TCP with every same-host peer: peer i gets bytes at
 * mine + i * stride, and its answer lands at theirs + i * bytes. The sends
 * go in one batch (a few bytes into each fresh socket: done at once), the
 * answers one peer at a time: a batch passes over all its transfers each
 * time a socket wakes it, and answers that come one by one made one batch
 * of them cost O(peers^2) per rank (with 255 peers, half of a rank's
 * set-up time). A peer that fails is still seen: at its turn, or through
 * the abort of a peer that saw it first; every wait is bounded. */
static dc_status swap(shm_plan *s, uint32_t round, const char *mine,
                      size_t stride, char *theirs, size_t bytes) {
  dc_comm c;
  dc_engine_begin(s->t, &c, DC_OPC_SETUP, bytes, DC_UINT8, DC_SUM, round, 0);
  dc_xfer *x = malloc(sizeof *x * (size_t)s->npeers);
  if (!x)
    return dc_engine_fail(s->t, DC_ERR_NOMEM, "no memory for the shm set-up");
  for (int i = 0; i < s->npeers; i++)
    x[i] = dc_xsend(s->peers[i], 0, mine + stride * (size_t)i, bytes);
  dc_status st = c.run(&c, x, s->npeers);
  free(x);
  for (int i = 0; st == DC_OK && i < s->npeers; i++) {
    dc_xfer r = dc_xrecv(s->peers[i], 0, theirs + bytes * (size_t)i, bytes);
    dc_engine_begin(s->t, &c, DC_OPC_SETUP, bytes, DC_UINT8, DC_SUM, round, 0);
    st = c.run(&c, &r, 1);
  }
  return st;
}

static void wire(shm_plan *s, int i, const dc_shm_seg *mine,
                 const dc_shm_seg *theirs) {
  dc_engine *t = s->t;
  int q = s->peers[i], me = s->p->rank, lanes = t->lanes;
  for (int l = 0; l < lanes; l++) {
    dc_engine_wire_pipes(
        t, q, l, dc_shm_pipe(theirs, (size_t)(pos(s, q, me) * lanes + l)),
        theirs->cap, dc_shm_pipe(mine, (size_t)(pos(s, me, q) * lanes + l)),
        mine->cap);
  }
}

static const dc_conn *conn(const shm_plan *s, int i) {
  return &s->t->conns[s->peers[i] * s->t->lanes];
}

/* The pid of peer i, from the kernel: SO_PEERCRED of the pair's own Unix
 * socket, or of a connection to the abstract socket its offer names (a
 * same-host pair on TCP: DISTCOMM_SHM=0 on one end, or another IP). */
static pid_t peer_pid(const shm_plan *s, int i, const shm_offer *o) {
  return conn(s, i)->unix_sock ? dc_sock_peer_pid(conn(s, i)->fd)
                               : dc_cred_pid(o->cred, sizeof o->cred);
}

static int any_tcp_peer(const shm_plan *s) {
  for (int i = 0; i < s->npeers; i++)
    if (!conn(s, i)->unix_sock)
      return 1;
  return 0;
}

/* Can we read peer i's memory? Its pid comes from the kernel. */
static int can_pull(const shm_plan *s, int i, const shm_offer *o, pid_t *pid) {
  uint64_t got = 0;
  *pid = dc_cma_enabled() && o->probe_at ? peer_pid(s, i, o) : -1;
  return *pid > 0 &&
         dc_cma_read((int)*pid, &got, o->probe_at, sizeof got) ==
             (ssize_t)sizeof got &&
         got == o->probe;
}

/* Map every peer's segment and try reading its memory; ok[i] says what
 * worked with peer i. */
static void attach_all(shm_plan *s, const shm_offer *offers, unsigned char *ok,
                       pid_t *pids) {
  dc_engine *t = s->t;
  for (int i = 0; i < s->npeers; i++) {
    char err[160];
    size_t pipes = (size_t)count_local(s, s->peers[i]) * (size_t)t->lanes;
    dc_shm_seg *seg = &t->segs[1 + i];
    const char *name = offers[i].name;
    ok[i] = name[0] && dc_shm_attach(seg, name, pipes, err, sizeof err) == DC_OK
                ? OK_PIPES
                : 0;
    if (!ok[i])
      dc_engine_log(
          s->t, "shared memory with rank %d unavailable (%s): using its socket",
          s->peers[i], name[0] ? err : "it has none");
    else if (can_pull(s, i, &offers[i], &pids[i]))
      ok[i] |= OK_PULL;
  }
}

/* Single copy is offered when every rank is on this host (all ranks know
 * that alike) and this rank reads every peer, which reads it back; the
 * ranks agree before each use (algo/pull.c). */
static dc_status wire_pull(shm_plan *s, const pid_t *pids,
                           const unsigned char *ok, int have_seg) {
  dc_engine *t = s->t;
  int all = s->npeers == s->p->size - 1, both = OK_PIPES | OK_PULL;
  int forced_here = dc_cma_forced(), forced = forced_here;
  for (int i = 0; i < s->npeers; i++) {
    /* only where the pipes are wired too: the peer's bits alone say little */
    all &= have_seg && (ok[i] & both) == both &&
           (ok[s->npeers + i] & both) == both;
    forced &= (ok[s->npeers + i] & OK_FORCED) != 0;
    dc_engine_set_pid(t, s->peers[i], (int)pids[i]);
  }
  int one_host = s->npeers > 0 && s->npeers == s->p->size - 1;
  /* Forced only where every rank is: the ranks' tuners must run alike
   * (algo/tune.h), or one would wait for a vote another never sends. */
  if (forced_here && !forced && all && one_host)
    dc_engine_log(t, "DISTCOMM_CMA=1 is not set on every rank: single copy "
                     "is chosen by measuring");
  dc_engine_set_pull(t, one_host, all && one_host, forced);
  return DC_OK;
}

static dc_status connect_pipes(shm_plan *s) {
  dc_engine *t = s->t;
  const dc_engine_plan *p = s->p;
  shm_offer mine = {0}, *offers;
  char *name = mine.name, err[160];
  probe_word =
      0x9E3779B97F4A7C15ull ^ (uint64_t)getpid(); /* the same every time */
  mine.probe_at = (uint64_t)(uintptr_t)&probe_word;
  mine.probe = probe_word;
  int cred =
      dc_cma_enabled() && any_tcp_peer(s) ? dc_cred_listen(mine.cred) : -1;
  size_t pipes = (size_t)count_local(s, p->rank) * (size_t)t->lanes;
  if (dc_shm_new_name(name) != DC_OK ||
      dc_shm_create(&t->segs[0], name, pipes, err, sizeof err) != DC_OK) {
    dc_engine_log(s->t, "no shared memory (%s): using the sockets",
                  name[0] ? err : "no name");
    name[0] = '\0';
  }
  offers = calloc((size_t)s->npeers, sizeof *offers);
  pid_t *pids = calloc((size_t)s->npeers, sizeof *pids);
  unsigned char *ok = calloc((size_t)s->npeers, 2); /* ours, then theirs */
  dc_status st = offers && ok && pids
                     ? swap(s, 0, (char *)&mine, 0, (char *)offers, sizeof mine)
                     : dc_engine_fail(s->t, DC_ERR_NOMEM, "no memory");
  if (st == DC_OK) { /* each peer's verdict on our segment */
    attach_all(s, offers, ok, pids);
    unsigned char forced = dc_cma_forced() ? OK_FORCED : 0;
    for (int i = 0; i < s->npeers; i++)
      ok[i] |= forced;
    st = swap(s, 1, (char *)ok, 1, (char *)ok + s->npeers, 1);
  }
  for (int i = 0; st == DC_OK && i < s->npeers; i++)
    if (name[0] && (ok[i] & OK_PIPES) && (ok[s->npeers + i] & OK_PIPES))
      wire(s, i, &t->segs[0], &t->segs[1 + i]);
  if (st == DC_OK)
    st = wire_pull(s, pids, ok, name[0] != '\0');
  dc_shm_unlink(&t->segs[0]); /* mapped by all who could: no name left */
  if (cred >= 0) /* every peer has read our pid (the verdicts came after) */
    close(cred);
  free(offers);
  free(pids);
  free(ok);
  return st;
}

dc_status dc_engine_setup_shm(dc_engine *t, const dc_engine_plan *p) {
  if (!dc_shm_enabled())
    return DC_OK;
  shm_plan s = {.t = t, .p = p};
  s.hosts = calloc((size_t)p->size, sizeof *s.hosts);
  s.peers = calloc((size_t)p->size, sizeof *s.peers);
  if (!s.hosts || !s.peers || !dc_engine_new_segs(t, p->size)) {
    free(s.hosts);
    free(s.peers);
    return dc_engine_fail(t, DC_ERR_NOMEM, "no memory for the shm set-up");
  }
  for (int q = 0; q < p->size; q++)
    s.hosts[q] = q == p->rank ? p->host : dc_engine_peer_host(t, q);
  for (int q = 0; q < p->size; q++)
    if (q != p->rank && s.hosts[q] == p->host)
      s.peers[s.npeers++] = q;
  dc_status st = s.npeers ? connect_pipes(&s) : DC_OK;
  if (st == DC_OK && s.npeers)
    dc_engine_log(t, "shared memory with %d same-host peer(s)%s", s.npeers,
                  t->pull_ok ? ", single copy" : "");
  free(s.hosts);
  free(s.peers);
  return st;
}
