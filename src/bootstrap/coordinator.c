/* The rendezvous of coordinator.h: rank 0 collects one JOIN per rank and
 * answers each with the TABLE, or with an ERROR that every joined rank
 * prints. Messages are a 32-byte header and a text payload:
 *   magic u32 'DCRV', version u16, kind u16, rank u32, size u32,
 *   naddrs u32, len u32, job u64 (little-endian), then len bytes:
 *   NONCE rank 0's first message on every connection: 32 random bytes;
 *         naddrs is 1 when rank 0 has a job token
 *   JOIN  the sender's addresses, one "ip:port" per line; with a token
 *         then the joiner's 32-byte nonce and a MAC (below)
 *   TABLE every rank's addresses in rank order, one per line
 *   ACK   rank 0 has the JOIN: from now on a closed connection means
 *         rank 0 died (before it, the joiner may have reached a previous
 *         job's coordinator, or a squatter: it dials again)
 *   ERROR why rank 0 gave up (printed escaped); job is the dc_status
 * With a job token a JOIN ends in a MAC over rank 0's nonce, its header and
 * the rest of its payload; a TABLE or ERROR ends in one over the joiner's
 * nonce, its header and text (keys from the token: transport/auth.h). A
 * JOIN that fails it, or that conflicts with the job (world size, rank,
 * address count), is dropped and logged, never fatal: only the timeout
 * ends rank 0's wait, and its message names the last refusal. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/coordinator.h"
#include "config/env.h"
#include "config/waiting.h"
#include "core/group.h"
#include "transport/auth.h"
#include "transport/frame.h"
#include "transport/mesh.h"
#include "transport/sock.h"

#define MAGIC 0x56524344u /* "DCRV" */
#define VERSION 2         /* 2: the NONCE first, MACs with a token */
#define HDR 32
#define PAYLOAD_MAX (1u << 20)
#define NONCE DC_AUTH_NONCE_BYTES
#define MAC DC_AUTH_PROOF_BYTES
#define LINE_MAX_BYTES 80 /* one address line, as parse_lines reads it */
/* The most a real JOIN holds: every address, the nonce and the MAC. */
#define JOIN_MAX (DC_HOSTFILE_MAX_ADDRS * LINE_MAX_BYTES + NONCE + MAC)
#define JOIN_SECONDS 5.0   /* from accept to a whole JOIN: strangers go */
#define VERDICT_SLACK 10.0 /* joiners wait this much longer than rank 0 */

enum { K_JOIN = 1, K_TABLE = 2, K_ERROR = 3, K_ACK = 4, K_NONCE = 5 };

typedef struct msg {
  uint32_t kind, rank, size, naddrs, len;
  uint64_t job;
} msg;

static void encode(const msg *m, unsigned char h[HDR]) {
  dc_put32(h, MAGIC);
  dc_put16(h + 4, VERSION);
  dc_put16(h + 6, m->kind);
  dc_put32(h + 8, m->rank);
  dc_put32(h + 12, m->size);
  dc_put32(h + 16, m->naddrs);
  dc_put32(h + 20, m->len);
  dc_put64(h + 24, m->job);
}

/* 0 ok, -1 not ours (magic), -2 another version, -3 too long. */
static int decode(const unsigned char h[HDR], msg *m) {
  if (dc_get32(h) != MAGIC)
    return -1;
  if (dc_get16(h + 4) != VERSION)
    return -2;
  *m = (msg){.kind = dc_get16(h + 6),
             .rank = dc_get32(h + 8),
             .size = dc_get32(h + 12),
             .naddrs = dc_get32(h + 16),
             .len = dc_get32(h + 20),
             .job = dc_get64(h + 24)};
  return m->len > PAYLOAD_MAX ? -3 : 0;
}

static dc_status send_msg(int fd, const msg *m, const char *payload,
                          double deadline) {
  unsigned char h[HDR];
  encode(m, h);
  dc_status st = dc_sock_write_all(fd, h, HDR, deadline);
  return st == DC_OK && m->len
             ? dc_sock_write_all(fd, payload, m->len, deadline)
             : st;
}

/* The MAC of header h, text[0..n) and extra[0..xn) (a nonce) under label. */
static void mac_of(const dc_auth *a, const char *label,
                   const unsigned char nonce[NONCE], const unsigned char h[HDR],
                   const void *text, size_t n, const void *extra, size_t xn,
                   unsigned char out[MAC]) {
  size_t all = NONCE + HDR + n + xn;
  unsigned char *b = malloc(all);
  memset(out, 0, MAC);
  if (!b)
    return; /* zeros: fails the check on the other end */
  memcpy(b, nonce, NONCE);
  memcpy(b + NONCE, h, HDR);
  if (n)
    memcpy(b + NONCE + HDR, text, n);
  if (xn)
    memcpy(b + NONCE + HDR + n, extra, xn);
  dc_auth_mac(a, label, b, all, out);
  free(b);
}

/* m with text[0..tn), then (with a token) extra and a MAC over all under
 * the other end's nonce. m->len is set here. */
static dc_status send_sealed(int fd, msg *m, const dc_auth *a,
                             const char *label,
                             const unsigned char nonce[NONCE], const char *text,
                             size_t tn, const unsigned char *extra, size_t xn,
                             double deadline) {
  size_t tail = a->on ? xn + MAC : 0;
  char *b = malloc(tn + tail + 1);
  if (!b)
    return DC_ERR_NOMEM;
  if (tn)
    memcpy(b, text, tn);
  m->len = (uint32_t)(tn + tail);
  if (a->on) {
    unsigned char h[HDR];
    encode(m, h);
    if (xn)
      memcpy(b + tn, extra, xn);
    mac_of(a, label, nonce, h, b, tn + xn, NULL, 0,
           (unsigned char *)b + tn + xn);
  }
  dc_status st = send_msg(fd, m, b, deadline);
  free(b);
  return st;
}

/* Addresses one per line into out[0..n): each must parse. The last line
 * may lack its newline: then p steps past end, and nothing more is read. */
static dc_status parse_lines(const char *text, size_t len, dc_addr *out, int n,
                             char *err, size_t errlen) {
  const char *p = text, *end = text + len;
  for (int i = 0; i < n; i++) {
    const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    char one[LINE_MAX_BYTES], why[160];
    size_t l = nl ? (size_t)(nl - p) : p < end ? (size_t)(end - p) : 0;
    if (p >= end || l >= sizeof one) {
      snprintf(err, errlen, "address %d of %d is missing or too long", i, n);
      return DC_ERR_CONFIG;
    }
    memcpy(one, p, l);
    one[l] = '\0';
    if (dc_addr_parse(one, 0, &out[i], why, sizeof why) != DC_OK) {
      snprintf(err, errlen, "%s", why);
      return DC_ERR_CONFIG;
    }
    p += l + 1;
  }
  return DC_OK;
}

/* n addresses, one per line, in a new string of *len bytes. */
static char *lines(const dc_addr *a, int n, uint32_t *len) {
  size_t cap = (size_t)n * sizeof a->text + 1, at = 0;
  char *s = malloc(cap);
  for (int i = 0; s && i < n; i++)
    at += (size_t)snprintf(s + at, cap - at, "%s\n", a[i].text);
  *len = (uint32_t)at;
  return s;
}

/* ---- rank 0 ---------------------------------------------------------- */

typedef struct joiner {
  int fd, rank; /* -1 until its JOIN is whole and good; -2 when its
                 * JOIN failed the job (it hears why) */
  double since;
  size_t have; /* header and payload bytes read */
  unsigned char hdr[HDR];
  msg m;
  char *payload;
  unsigned char nonce[NONCE];  /* ours, sent on accept */
  unsigned char theirs[NONCE]; /* from its JOIN (with a token) */
  char from[64];
} joiner;

typedef struct server {
  const dc_coord *c;
  int lfd, naddrs;
  joiner *j;
  int nj, cap, joined, timed_out;
  int protect; /* no token: only our user on this host may join */
  const dc_auth *auth;
  int rest;          /* accept hit EMFILE: the listener rests until then */
  double rest_until; /* or until a descriptor is freed */
  char refusal[256]; /* the last refusal, for a timeout message */
  dc_addr *table;    /* size * naddrs */
  int *claimed;      /* joiner index per rank, -1 */
  char why[512];     /* set: the rendezvous failed */
} server;

/* Verbose: a line on stderr about the rendezvous. */
/* A connection or JOIN refused: remembered for the timeout message, and
 * logged when verbose. */
static void refused(server *s, const char *from, const char *why) {
  snprintf(s->refusal, sizeof s->refusal, "%.60s: %.190s", from, why);
  if (dc_env_verbose())
    fprintf(stderr, "[distcomm rank 0] coordinator %s refused %s: %s\n",
            s->c->addr.text, from, why);
}

/* The ranks that have not joined, " 1 2 3" (16 at most, then a count). */
static void missing_ranks(const server *s, char *out, size_t n) {
  size_t at = 0;
  int shown = 0;
  out[0] = '\0';
  for (int r = 1; r < s->c->size && at < n - 16; r++)
    if (s->claimed[r] < 0 && shown++ < 16)
      at += (size_t)snprintf(out + at, n - at, " %d", r);
  if (shown > 16)
    snprintf(out + at, n - at, " and %d more", shown - 16);
}

static void drop(joiner *jo) {
  if (jo->fd >= 0)
    close(jo->fd);
  jo->fd = -1;
  free(jo->payload);
  jo->payload = NULL;
}

/* Refuse joiner k: log why, tell it (when its JOIN was authentic, or there
 * is no token: a stranger learns nothing), drop it. Never fatal. */
static void refuse(server *s, int k, const char *why, int tell) {
  joiner *jo = &s->j[k];
  refused(s, jo->from, why);
  msg e = {.kind = K_ERROR, .job = (uint64_t)DC_ERR_CONFIG};
  if (tell && jo->fd >= 0)
    send_sealed(jo->fd, &e, s->auth, "DCRV verdict", jo->theirs, why,
                strlen(why), NULL, 0, dc_now() + 1.0);
  drop(jo);
}

/* Equal, in time that does not depend on where they differ. */
static int same_mac(const unsigned char *a, const unsigned char *b) {
  unsigned d = 0;
  for (int i = 0; i < MAC; i++)
    d |= (unsigned)(a[i] ^ b[i]);
  return d == 0;
}

/* With a token: the JOIN's MAC holds, and its nonce is kept; m.len then
 * counts only its text. 0 when it fails. */
static int authentic(server *s, joiner *jo) {
  if (!s->auth->on)
    return 1;
  if (jo->m.len < NONCE + MAC)
    return 0;
  size_t tn = jo->m.len - NONCE - MAC;
  const unsigned char *tail = (const unsigned char *)jo->payload + tn;
  unsigned char want[MAC];
  memcpy(jo->theirs, tail, NONCE); /* a refusal goes under it */
  mac_of(s->auth, "DCRV join", jo->nonce, jo->hdr, jo->payload, tn + NONCE,
         NULL, 0, want);
  if (!same_mac(want, tail + NONCE))
    return 0;
  jo->m.len = (uint32_t)tn;
  return 1;
}

/* Why a whole, authentic JOIN cannot be taken, into why; 0 when it can. */
static int conflict(const server *s, const joiner *jo, char *why, size_t n) {
  const msg *m = &jo->m;
  why[0] = '\0';
  const dc_coord *c = s->c;
  char bad[200];
  if ((int)m->size != c->size)
    snprintf(why, n,
             "world size disagreement: the process at %s (rank %u) was "
             "started with %u ranks, rank 0 with %d",
             jo->from, m->rank, m->size, c->size);
  else if (m->rank == 0 || m->rank >= (uint32_t)c->size) /* unsigned */
    snprintf(why, n, "the process at %s claims rank %u, which %s", jo->from,
             m->rank,
             m->rank ? "is out of range"
                     : "is the coordinator's own (two processes started as "
                       "rank 0?)");
  else if (s->claimed[m->rank] >= 0)
    snprintf(why, n, "rank %u was claimed twice: by %s and by %s", m->rank,
             s->j[s->claimed[m->rank]].from, jo->from);
  else if ((int)m->naddrs != s->naddrs)
    snprintf(why, n,
             "rank %u (%s) listens on %u address(es), rank 0 on %d: set "
             "DISTCOMM_IFNAME alike on every rank",
             m->rank, jo->from, m->naddrs, s->naddrs);
  else if (parse_lines(jo->payload, m->len, &s->table[m->rank * s->naddrs],
                       s->naddrs, bad, sizeof bad) != DC_OK)
    snprintf(why, n, "rank %u (%s) sent a bad address: %s", m->rank, jo->from,
             bad);
  else
    return 0;
  return 1;
}

/* Whether a JOIN comes from a process of this job, as far as we can
 * tell: it proved the token, or (no token) the kernel says it is ours. Its
 * conflicts then fail the job, as a misconfigured rank's should; anyone
 * else's (DISTCOMM_INSECURE=1) are only dropped. */
static int trusted(const server *s) { return s->auth->on || s->protect; }

/* A JOIN that is whole: take it, or refuse it. */
static void admit(server *s, int k) {
  joiner *jo = &s->j[k];
  char why[400];
  if (jo->m.kind != K_JOIN) {
    refuse(s, k, "it sent something other than a JOIN", 0);
  } else if (!authentic(s, jo)) {
    refuse(s, k,
           "its JOIN failed the job token's MAC (a different token, or not "
           "of this job)",
           1);
  } else if (conflict(s, jo, why, sizeof why) && !trusted(s)) {
    refuse(s, k, why, 1);
  } else if (why[0] && trusted(s)) {
    snprintf(s->why, sizeof s->why, "%s", why);
    jo->rank = -2; /* it hears why with the others */
  } else {
    const msg *m = &jo->m;
    jo->rank = (int)m->rank;
    s->claimed[m->rank] = k;
    s->joined++;
    msg ack = {.kind = K_ACK, .rank = m->rank, .size = m->size};
    send_msg(jo->fd, &ack, NULL, dc_now() + 1.0);
  }
}

/* A header just read: the payload's room, only up to what a real JOIN can
 * hold (never from the claimed size alone). 0 when it is refused. */
static int room(server *s, int k) {
  joiner *jo = &s->j[k];
  int d = decode(jo->hdr, &jo->m);
  if (d == -2) {
    char why[160];
    snprintf(why, sizeof why,
             "it speaks another rendezvous version (%u): mixed distcomm "
             "versions?",
             (unsigned)dc_get16(jo->hdr + 4));
    if (s->protect) /* ours, says the kernel: the job cannot work */
      snprintf(s->why, sizeof s->why, "the process at %s %s", jo->from, why);
    refuse(s, k, why, 0);
    return 0;
  }
  if (d != 0 || jo->m.kind != K_JOIN || jo->m.len > JOIN_MAX) {
    refuse(s, k, "it sent no JOIN, or one longer than a real one", 0);
    return 0;
  }
  if (!(jo->payload = malloc(jo->m.len + 1))) {
    refuse(s, k, "out of memory for its JOIN", 0);
    return 0;
  }
  return 1;
}

/* Read what is there; a whole JOIN goes to admit(). */
static void feed(server *s, int k) {
  joiner *jo = &s->j[k];
  int done = 0;
  while (!done && jo->fd >= 0) {
    size_t want = jo->have < HDR ? HDR - jo->have : HDR + jo->m.len - jo->have;
    char *to = jo->have < HDR ? (char *)jo->hdr + jo->have
                              : jo->payload + (jo->have - HDR);
    ssize_t r = want ? recv(jo->fd, to, want, MSG_DONTWAIT) : 0;
    if (want && r <= 0) {
      if (r == 0 || (errno != EAGAIN && errno != EINTR))
        drop(jo); /* gone before a whole JOIN: nothing claimed */
      return;
    }
    jo->have += want ? (size_t)r : 0;
    if (jo->have == HDR && !room(s, k))
      return;
    done = jo->have == HDR + jo->m.len && jo->have >= HDR;
  }
  if (done)
    admit(s, k);
}

/* Connections not yet joined, and the oldest of them: the oldest silent
 * one (nothing read) first. */
static int pending(const server *s, int *oldest) {
  int n = 0, best = -1;
  for (int k = 0; k < s->nj; k++) {
    const joiner *jo = &s->j[k];
    if (jo->fd < 0 || jo->rank >= 0)
      continue;
    n++;
    if (best < 0 || (jo->have == 0) > (s->j[best].have == 0) ||
        ((jo->have == 0) == (s->j[best].have == 0) &&
         jo->since < s->j[best].since))
      best = k;
  }
  *oldest = best;
  return n;
}

/* A slot for a new connection: a dropped one again, or a new one. */
static int slot(server *s) {
  for (int k = 0; k < s->nj; k++)
    if (s->j[k].fd < 0 && s->j[k].rank < 0)
      return k;
  if (s->nj == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    joiner *j = realloc(s->j, sizeof *j * (size_t)cap);
    if (!j)
      return -1;
    s->j = j;
    s->cap = cap;
  }
  return s->nj++;
}

/* Our NONCE to a new connection (a fresh socket takes 64 bytes at once). */
static int greet(server *s, joiner *jo) {
  if (getrandom(jo->nonce, NONCE, 0) != NONCE)
    return 0;
  unsigned char b[HDR + NONCE];
  msg m = {.kind = K_NONCE,
           .size = (uint32_t)s->c->size,
           .naddrs = (uint32_t)s->auth->on,
           .len = NONCE};
  encode(&m, b);
  memcpy(b + HDR, jo->nonce, NONCE);
  return send(jo->fd, b, sizeof b, MSG_DONTWAIT | MSG_NOSIGNAL) ==
         (ssize_t)sizeof b;
}

/* Joiners waiting at once: enough for every rank twice and some strangers;
 * past it the oldest silent one goes. */
static int joiners_max(const server *s) { return 2 * s->c->size + 32; }

static void welcome(server *s, int fd, const char *from) {
  int old, k;
  if (pending(s, &old) >= joiners_max(s))
    refuse(s, old,
           "too many connections waiting to join: the oldest "
           "silent one goes",
           0);
  if ((k = slot(s)) < 0) {
    close(fd);
    return;
  }
  s->j[k] = (joiner){.fd = fd, .rank = -1, .since = dc_now()};
  snprintf(s->j[k].from, sizeof s->j[k].from, "%s", from);
  if (!greet(s, &s->j[k]))
    drop(&s->j[k]);
}

static void take(server *s) {
  for (;;) {
    int fd;
    char from[64], why[128];
    struct pollfd p = {.fd = s->lfd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
      return;
    errno = 0;
    if (dc_sock_accept(s->lfd, dc_now(), &fd, from, sizeof from, why,
                       sizeof why) != DC_OK) {
      if (errno == EMFILE || errno == ENFILE) { /* the listener stays
                            readable: rest it, and free the oldest silent */
        int old;
        s->rest = 1;
        s->rest_until = dc_now() + 0.5;
        if (pending(s, &old) > 0)
          refuse(s, old,
                 "out of file descriptors: the oldest silent "
                 "connection goes",
                 0);
      }
      return;
    }
    if (s->protect && !dc_sock_peer_is_us(fd)) {
      refused(s, from,
              "no job token, so only this host's processes of this user may "
              "join");
      close(fd);
      continue;
    }
    welcome(s, fd, from);
  }
}

/* One round: wait for bytes or newcomers, serve them, drop the slow. */
static void serve_round(server *s, double deadline) {
  struct pollfd *pf = calloc((size_t)s->nj + 1, sizeof *pf);
  int *map = calloc((size_t)s->nj + 1, sizeof *map), n = 1;
  if (!pf || !map) {
    snprintf(s->why, sizeof s->why, "out of memory");
    free(pf);
    free(map);
    return;
  }
  if (s->rest && dc_now() > s->rest_until)
    s->rest = 0;
  pf[0] = (struct pollfd){.fd = s->rest ? -1 : s->lfd, .events = POLLIN};
  for (int k = 0; k < s->nj; k++)
    if (s->j[k].fd >= 0 && s->j[k].rank < 0) {
      map[n] = k;
      pf[n++] = (struct pollfd){.fd = s->j[k].fd, .events = POLLIN};
    }
  double left = deadline - dc_now();
  poll(pf, (nfds_t)n, left > 0.1 ? 100 : left > 0 ? (int)(left * 1000) + 1 : 0);
  for (int i = 1; i < n && !s->why[0]; i++)
    if (pf[i].revents)
      feed(s, map[i]);
  if (pf[0].revents & POLLIN)
    take(s);
  for (int k = 0; k < s->nj; k++)
    if (s->j[k].fd >= 0 && s->j[k].rank < 0 &&
        dc_now() - s->j[k].since > JOIN_SECONDS) {
      refused(s, s->j[k].from, "no whole JOIN within 5 s");
      drop(&s->j[k]);
      s->rest = 0; /* a descriptor is free */
    }
  free(pf);
  free(map);
}

static void missing(server *s, double timeout) {
  s->timed_out = 1;
  char ranks[200];
  missing_ranks(s, ranks, sizeof ranks);
  size_t at = (size_t)snprintf(s->why, sizeof s->why,
                               "the rendezvous at %s timed out after %.0f s "
                               "with %d of %d ranks: missing rank(s)%s",
                               s->c->addr.text, timeout, s->joined + 1,
                               s->c->size, ranks);
  if (s->refusal[0] && at < sizeof s->why)
    snprintf(s->why + at, sizeof s->why - at, " (last refused: %s)",
             s->refusal);
}

static uint64_t pick_job(void) {
  const char *s = dc_env_str(DC_ENV_JOB_ID);
  char *end;
  if (s && *s) {
    unsigned long long v = strtoull(s, &end, 16);
    if (*end == '\0')
      return v;
  }
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
    v = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(dc_now() * 1e9);
  return v;
}

/* Everyone joined: the table to each; else the reason to each. */
static dc_status answer(server *s, uint64_t job, char *err, size_t errlen) {
  msg m = {
      .size = (uint32_t)s->c->size, .naddrs = (uint32_t)s->naddrs, .job = job};
  char *text = NULL;
  uint32_t tn = 0;
  if (!s->why[0]) {
    text = lines(s->table, s->c->size * s->naddrs, &tn);
    if (!text)
      snprintf(s->why, sizeof s->why, "out of memory");
  }
  if (s->why[0]) {
    free(text);
    text = s->why;
    tn = (uint32_t)strlen(s->why);
  }
  dc_status st = s->timed_out ? DC_ERR_TIMEOUT : DC_ERR_CONFIG;
  m.kind = s->why[0] ? K_ERROR : K_TABLE;
  if (s->why[0])
    m.job = (uint64_t)st;           /* an ERROR's job field: the status */
  double deadline = dc_now() + 5.0; /* each joiner is waiting to read */
  for (int k = 0; k < s->nj; k++)
    if (s->j[k].fd >= 0 && (s->j[k].rank >= 0 || s->j[k].rank == -2)) {
      m.rank = (uint32_t)s->j[k].rank;
      send_sealed(s->j[k].fd, &m, s->auth, "DCRV verdict", s->j[k].theirs, text,
                  tn, NULL, 0, deadline);
    }
  if (!s->why[0]) {
    free(text);
    return DC_OK;
  }
  snprintf(err, errlen, "%s", s->why);
  return st;
}

/* Listen on the coordinator's address (any address, when it is not ours:
 * behind a NAT or a service name). A previous job may hold the port for a
 * moment: try again until the deadline. */
static dc_status coord_listen(const dc_coord *c, double deadline, int *fd,
                              char *err, size_t errlen) {
  dc_addr a = c->addr;
  int e = 0;
  dc_waiting w = dc_waiting_start();
  while (dc_now() < deadline) {
    *fd = socket(a.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (*fd >= 0 && bind(*fd, (struct sockaddr *)&a.sa, a.salen) == 0 &&
        listen(*fd, 1024) == 0)
      return DC_OK;
    e = errno;
    if (*fd >= 0)
      close(*fd);
    if (e == EADDRNOTAVAIL && a.sa.ss_family == AF_INET)
      ((struct sockaddr_in *)&a.sa)->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (e == EADDRNOTAVAIL)
      ((struct sockaddr_in6 *)&a.sa)->sin6_addr = in6addr_any;
    else if (e != EADDRINUSE)
      break;
    else
      usleep(100000);
    if (e == EADDRINUSE && dc_waiting_due(&w))
      fprintf(stderr,
              "[distcomm rank 0] waiting to listen on the coordinator "
              "address %s (%s): another process holds the port (another "
              "job's coordinator, or two processes started as rank 0?) "
              "after %.0f s (the timeout ends it in %.0f s)\n",
              c->addr.text, c->from, dc_waiting_for(&w), deadline - dc_now());
  }
  snprintf(err, errlen,
           "rank 0 cannot listen on the coordinator address %s "
           "(%s): %s%s",
           c->addr.text, c->from, strerror(e),
           e == EADDRINUSE ? " until the timeout (another job's coordinator, "
                             "or two processes started as rank 0?)"
                           : "");
  *fd = -1;
  return DC_ERR_SYSTEM;
}

/* Rank 0 has waited a while for ranks: which, where, until when. */
static void note_missing(const server *s, const dc_waiting *w,
                         double deadline) {
  char ranks[200];
  missing_ranks(s, ranks, sizeof ranks);
  fprintf(stderr,
          "[distcomm rank 0] waiting at the coordinator %s (%s) for "
          "rank(s)%s: %d of %d here after %.0f s (the timeout ends it in "
          "%.0f s)\n",
          s->c->addr.text, s->c->from, ranks, s->joined + 1, s->c->size,
          dc_waiting_for(w), deadline - dc_now());
}

static dc_status serve(const dc_coord *c, const dc_addr *mine, int n,
                       double deadline, const dc_auth *a, int protect,
                       dc_hostfile *all, uint64_t *job, char *err,
                       size_t errlen) {
  double timeout = deadline - dc_now();
  server s = {.c = c, .naddrs = n, .protect = protect, .auth = a};
  s.table = calloc((size_t)c->size * (size_t)n, sizeof *s.table);
  s.claimed = malloc(sizeof *s.claimed * (size_t)c->size);
  if (!s.table || !s.claimed) {
    free(s.table);
    free(s.claimed);
    snprintf(err, errlen, "out of memory");
    return DC_ERR_NOMEM;
  }
  for (int r = 0; r < c->size; r++)
    s.claimed[r] = -1;
  memcpy(s.table, mine, sizeof *mine * (size_t)n);
  dc_status st = coord_listen(c, deadline, &s.lfd, err, errlen);
  if (st == DC_OK) {
    dc_waiting w = dc_waiting_start();
    while (s.joined < c->size - 1 && !s.why[0] && dc_now() < deadline) {
      serve_round(&s, deadline);
      if (s.joined < c->size - 1 && dc_waiting_due(&w))
        note_missing(&s, &w, deadline);
    }
    if (!s.why[0] && s.joined < c->size - 1)
      missing(&s, timeout);
    *job = pick_job();
    st = answer(&s, *job, err, errlen);
    close(s.lfd);
  }
  for (int k = 0; k < s.nj; k++)
    drop(&s.j[k]);
  free(s.j);
  free(s.claimed);
  if (st != DC_OK) {
    free(s.table);
    return st;
  }
  *all = (dc_hostfile){.nranks = c->size, .naddrs = n, .addrs = s.table};
  return DC_OK;
}

/* ---- every other rank ------------------------------------------------ */

/* What a joiner knows of its connection: the token, and both nonces. */
typedef struct chan {
  const dc_auth *auth;
  unsigned char theirs[NONCE], mine[NONCE];
  int heard; /* no NONCE came: 1 silence for ACK_SECONDS, 2 a close */
} chan;

/* The most a real TABLE or ERROR holds (its MAC included). */
static size_t verdict_max(const dc_coord *c, int n) {
  size_t t = (size_t)c->size * (size_t)n * LINE_MAX_BYTES;
  return (t > 1024 ? t : 1024) + MAC;
}

/* With a token: the verdict's MAC holds (under our nonce); m->len then
 * counts only its text. */
static int sealed_ok(const chan *L, const unsigned char h[HDR], msg *m,
                     const char *text) {
  if (!L->auth->on)
    return 1;
  if (m->len < MAC)
    return 0;
  unsigned char want[MAC];
  mac_of(L->auth, "DCRV verdict", L->mine, h, text, m->len - MAC, NULL, 0,
         want);
  if (!same_mac(want, (const unsigned char *)text + m->len - MAC))
    return 0;
  m->len -= MAC;
  return 1;
}

/* Rank 0's TABLE or ERROR; h holds its header when it came first (no ACK
 * before an ERROR for the JOIN that caused it). */
static dc_status verdict(const dc_coord *c, const chan *L, int fd, int n,
                         double deadline, unsigned char h[HDR], int have,
                         dc_hostfile *all, uint64_t *job, char *err,
                         size_t errlen) {
  msg m;
  dc_status st =
      have ? DC_OK : dc_sock_read_all(fd, h, HDR, deadline + VERDICT_SLACK);
  int bad = st == DC_OK ? decode(h, &m) : 0;
  if (!bad && st == DC_OK && m.len > verdict_max(c, n))
    bad = -3;
  char *text = st == DC_OK && !bad ? malloc(m.len + 1) : NULL;
  if (text)
    st = dc_sock_read_all(fd, text, m.len, deadline + VERDICT_SLACK);
  if (st != DC_OK || bad || !text) {
    snprintf(err, errlen,
             st == DC_ERR_TIMEOUT
                 ? "the coordinator %s (%s) sent no answer before the timeout"
             : st != DC_OK ? "the coordinator %s (%s) closed the connection "
                             "during the rendezvous: did rank 0 exit?"
             : bad ? "the process at %s (%s) is not a distcomm coordinator "
                     "of this version"
                   : "out of memory (%s, %s)",
             c->addr.text, c->from);
    free(text);
    return st != DC_OK ? st : bad ? DC_ERR_CONFIG : DC_ERR_NOMEM;
  }
  if (!sealed_ok(L, h, &m, text)) {
    snprintf(err, errlen,
             "the coordinator %s (%s) did not prove the job token: its "
             "answer's MAC does not match this rank's token (another "
             "token, or not this job's rank 0)",
             c->addr.text, c->from);
    free(text);
    return DC_ERR_AUTH;
  }
  text[m.len] = '\0';
  if (m.kind == K_ERROR) {
    char safe[600];
    dc_escape_text(text, m.len, safe, sizeof safe);
    snprintf(err, errlen,
             "rank 0 (the coordinator %s) ended the rendezvous: "
             "%s",
             c->addr.text, safe);
  }
  st = m.kind != K_ERROR                   ? DC_OK
       : m.job == (uint64_t)DC_ERR_TIMEOUT ? DC_ERR_TIMEOUT
                                           : DC_ERR_CONFIG;
  if (st == DC_OK &&
      (m.kind != K_TABLE || (int)m.size != c->size || (int)m.naddrs != n)) {
    snprintf(err, errlen,
             "the coordinator %s sent a table that does not fit "
             "(%u ranks, %u addresses each; ours: %d, %d)",
             c->addr.text, m.size, m.naddrs, c->size, n);
    st = DC_ERR_CONFIG;
  }
  dc_addr *table =
      st == DC_OK ? calloc((size_t)c->size * (size_t)n, sizeof *table) : NULL;
  char why[200];
  if (st == DC_OK && (!table || parse_lines(text, m.len, table, c->size * n,
                                            why, sizeof why) != DC_OK)) {
    snprintf(err, errlen, "the coordinator %s sent a bad table: %s",
             c->addr.text, table ? why : "out of memory");
    st = DC_ERR_CONFIG;
  }
  free(text);
  if (st != DC_OK) {
    free(table);
    return st;
  }
  *job = m.job;
  *all = (dc_hostfile){.nranks = c->size, .naddrs = n, .addrs = table};
  return DC_OK;
}

/* Rank 0's NONCE, its first message, into L->theirs: 1 got it, 0 nothing
 * or a close (dial again), -1 not ours, -3 one of us has a token and the
 * other none (err says). */
#define ACK_SECONDS 5.0
static int greeted(int fd, const dc_coord *c, chan *L, double until, char *err,
                   size_t errlen) {
  unsigned char g[HDR];
  msg m;
  dc_status st = dc_sock_read_all(fd, g, HDR, until);
  if (st != DC_OK) {
    L->heard = st == DC_ERR_TIMEOUT ? 1 : 2;
    return 0;
  }
  if (decode(g, &m) != 0 || m.kind != K_NONCE || m.len != NONCE)
    return -1;
  if (dc_sock_read_all(fd, L->theirs, NONCE, until) != DC_OK)
    return 0;
  if (m.naddrs == (uint32_t)L->auth->on)
    return 1;
  snprintf(err, errlen,
           "rank 0 (the coordinator %s, %s) has %s job token and rank %d "
           "has %s: give every rank the same DISTCOMM_JOB_TOKEN or "
           "DISTCOMM_JOB_TOKEN_FILE (distcomm-launch does), or none",
           c->addr.text, c->from, m.naddrs ? "a" : "no", c->rank,
           L->auth->on ? "one" : "none");
  return -3;
}

/* The first answer to our JOIN, within ACK_SECONDS, into h: 1 an ACK, 2 a
 * verdict already, 0 nothing or a close (dial again), -1 not ours, -3 a
 * token on one side only. */
static int acked(int fd, const dc_coord *c, chan *L, const dc_addr *mine, int n,
                 double deadline, unsigned char h[HDR], char *err,
                 size_t errlen) {
  double until = dc_now() + ACK_SECONDS;
  int g = greeted(fd, c, L, until < deadline ? until : deadline, err, errlen);
  if (g <= 0)
    return g;
  if (getrandom(L->mine, NONCE, 0) != NONCE)
    return 0;
  msg m = {.kind = K_JOIN,
           .rank = (uint32_t)c->rank,
           .size = (uint32_t)c->size,
           .naddrs = (uint32_t)n};
  uint32_t tn = 0;
  char *text = lines(mine, n, &tn);
  dc_status st = text ? send_sealed(fd, &m, L->auth, "DCRV join", L->theirs,
                                    text, tn, L->mine, NONCE, deadline)
                      : DC_ERR_NOMEM;
  free(text);
  if (st != DC_OK)
    return 0;
  until = dc_now() + ACK_SECONDS;
  if (dc_sock_read_all(fd, h, HDR, until < deadline ? until : deadline) !=
      DC_OK)
    return 0;
  if (decode(h, &m) != 0)
    return -1;
  return m.kind == K_ACK ? 1 : 2;
}

/* A joiner has waited a while: for what, where, until when. */
static void note_join(const dc_coord *c, const dc_waiting *w, double deadline,
                      const char *what) {
  fprintf(stderr,
          "[distcomm rank %d] waiting for the coordinator %s (%s): %s, after "
          "%.0f s (the timeout ends it in %.0f s)\n",
          c->rank, c->addr.text, c->from, what, dc_waiting_for(w),
          deadline - dc_now());
}

/* What answered at the coordinator's address instead of one. */
static const char *heard_what(int heard) {
  return heard == 1 ? "something there answered but is not a distcomm "
                      "coordinator (it sent nothing within 5 s)"
                    : "something there answered but is not a distcomm "
                      "coordinator (it closed the connection at once)";
}

/* Wait for rank 0's verdict, saying so now and then: rank 0 answers when
 * every rank has joined. Returns when readable or at the deadline. */
static void await_verdict(const dc_coord *c, int fd, dc_waiting *w,
                          double deadline) {
  for (;;) {
    double now = dc_now(), until = dc_waiting_until(w, deadline);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (now >= deadline || poll(&p, 1, (int)((until - now) * 1000) + 1) > 0)
      return;
    if (dc_waiting_due(w))
      note_join(c, w, deadline,
                "joined; rank 0 answers once every rank has joined");
  }
}

static dc_status join(const dc_coord *c, const dc_addr *mine, int n,
                      double deadline, const dc_auth *a, dc_hostfile *all,
                      uint64_t *job, char *err, size_t errlen) {
  double timeout = deadline - dc_now();
  dc_waiting w = dc_waiting_start();
  int heard = 0; /* the last connection's answer, when not a coordinator's */
  for (int tries = 0; dc_now() < deadline; tries++) {
    int fd, got;
    char why[200];
    unsigned char h[HDR];
    if (tries)
      usleep(200000);
    if (dc_waiting_due(&w))
      note_join(c, &w, deadline,
                heard ? heard_what(heard)
                      : "nothing listens there yet (is rank 0 running?)");
    double slice = dc_waiting_until(&w, deadline);
    dc_status cs = dc_sock_connect(&c->addr, slice, &fd, why, sizeof why);
    if (cs == DC_ERR_TIMEOUT && dc_now() < deadline)
      continue; /* time for a note */
    if (cs != DC_OK)
      break;
    chan L = {.auth = a};
    got = acked(fd, c, &L, mine, n, deadline, h, err, errlen);
    if (got > 0) {
      if (got == 1) /* at the deadline verdict() says what is missing */
        await_verdict(c, fd, &w, deadline);
      dc_status st =
          verdict(c, &L, fd, n, deadline, h, got == 2, all, job, err, errlen);
      close(fd);
      return st;
    }
    close(fd);
    heard = got == 0 ? L.heard : 0;
    if (got == -3)
      return DC_ERR_CONFIG;
    if (got < 0) {
      snprintf(err, errlen,
               "the process at %s (%s) is not a distcomm "
               "coordinator of this version",
               c->addr.text, c->from);
      return DC_ERR_CONFIG;
    }
  }
  if (heard)
    snprintf(err, errlen,
             "rank %d could not join the coordinator %s (%s) within %.0f s: "
             "%s; another program holds that port? (is rank 0 running?)",
             c->rank, c->addr.text, c->from, timeout, heard_what(heard));
  else
    snprintf(err, errlen,
             "rank %d could not reach the coordinator %s (%s) "
             "within %.0f s: is rank 0 running?",
             c->rank, c->addr.text, c->from, timeout);
  return DC_ERR_TIMEOUT;
}

/* Protected mode (no token, no DISTCOMM_INSECURE=1): rank 0 lets in only
 * this host's processes of this user; a joiner whose coordinator is on
 * another host fails at once, saying how to give the job a token. */
dc_status dc_coord_rendezvous(const dc_coord *c, const dc_addr *mine, int n,
                              double deadline, dc_hostfile *all, uint64_t *job,
                              char *err, size_t errlen) {
  dc_auth auth;
  dc_status st = dc_auth_from_env(&auth, err, errlen);
  if (st != DC_OK)
    return st;
  int protect = !auth.on && dc_env_flag(DC_ENV_INSECURE) != 1;
  if (protect && c->rank != 0 && !dc_addr_is_ours(&c->addr)) {
    snprintf(err, errlen,
             "the coordinator %s (%s) is on another host and the job has "
             "no job token (without one it lets in only this host's "
             "processes of this user): %s",
             c->addr.text, c->from, dc_how_to_token());
    st = DC_ERR_CONFIG;
  } else if (c->rank == 0) {
    st = serve(c, mine, n, deadline, &auth, protect, all, job, err, errlen);
  } else {
    st = join(c, mine, n, deadline, &auth, all, job, err, errlen);
  }
  dc_auth_clear(&auth);
  return st;
}
