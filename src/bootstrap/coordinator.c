/* The rendezvous of coordinator.h: rank 0 collects one JOIN per rank and
 * answers each with the TABLE, or with an ERROR that every joined rank
 * prints. Messages are a 32-byte header and a text payload:
 *   magic u32 'DCRV', version u16, kind u16, rank u32, size u32,
 *   naddrs u32, len u32, job u64 (little-endian), then len bytes:
 *   JOIN  the sender's addresses, one "ip:port" per line
 *   TABLE every rank's addresses in rank order, one per line
 *   ACK   rank 0 has the JOIN: from now on a closed connection means
 *         rank 0 died (before it, the joiner may have reached a previous
 *         job's coordinator, or a squatter: it dials again)
 *   ERROR why rank 0 gave up (printed escaped); job is the dc_status */
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
#include "core/group.h"
#include "transport/auth.h"
#include "transport/frame.h"
#include "transport/mesh.h"
#include "transport/sock.h"

#define MAGIC 0x56524344u /* "DCRV" */
#define VERSION 1
#define HDR 32
#define PAYLOAD_MAX (1u << 20)
#define JOIN_SECONDS 5.0   /* from accept to a whole JOIN: strangers go */
#define VERDICT_SLACK 10.0 /* joiners wait this much longer than rank 0 */

enum { K_JOIN = 1, K_TABLE = 2, K_ERROR = 3, K_ACK = 4 };

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

/* Addresses one per line into out[0..n): each must parse. The last line
 * may lack its newline: then p steps past end, and nothing more is read. */
static dc_status parse_lines(const char *text, size_t len, dc_addr *out, int n,
                             char *err, size_t errlen) {
  const char *p = text, *end = text + len;
  for (int i = 0; i < n; i++) {
    const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
    char one[80], why[160];
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
  char from[64];
} joiner;

typedef struct server {
  const dc_coord *c;
  int lfd, naddrs;
  joiner *j;
  int nj, cap, joined, timed_out;
  int protect;       /* no token: only our user on this host may join */
  char refusal[256]; /* the last refusal, for a timeout message */
  dc_addr *table;    /* size * naddrs */
  int *claimed;      /* joiner index per rank, -1 */
  char why[512];     /* set: the rendezvous failed */
} server;

/* Verbose: a line on stderr about the rendezvous. */
/* A connection or JOIN refused: remembered for the timeout message, and
 * logged when verbose. */
static void refused(server *s, const char *from, const char *why) {
  snprintf(s->refusal, sizeof s->refusal, "%s: %s", from, why);
  if (dc_env_verbose())
    fprintf(stderr, "[distcomm rank 0] coordinator %s refused %s: %s\n",
            s->c->addr.text, from, why);
}

static void drop(joiner *jo) {
  if (jo->fd >= 0)
    close(jo->fd);
  jo->fd = -1;
  free(jo->payload);
  jo->payload = NULL;
}

/* A JOIN that is whole: check it against ours; sets s->why on a conflict
 * that fails the job, drops a stranger quietly. */
static void admit(server *s, int k) {
  joiner *jo = &s->j[k];
  const msg *m = &jo->m;
  const dc_coord *c = s->c;
  char why[200];
  if (m->kind != K_JOIN) {
    drop(jo);
  } else if ((int)m->size != c->size) {
    snprintf(s->why, sizeof s->why,
             "world size disagreement: the process "
             "at %s (rank %u) was started with %u ranks, rank 0 with %d",
             jo->from, m->rank, m->size, c->size);
  } else if (m->rank == 0 || m->rank >= (uint32_t)c->size) { /* unsigned:
                                     a rank of 2^31 or more is out too */
    snprintf(
        s->why, sizeof s->why,
        "the process at %s claims rank %u, which "
        "%s",
        jo->from, m->rank,
        m->rank
            ? "is out of range"
            : "is the coordinator's own (two processes started as rank 0?)");
  } else if (s->claimed[m->rank] >= 0) {
    snprintf(s->why, sizeof s->why,
             "rank %u was claimed twice: by %s and by "
             "%s",
             m->rank, s->j[s->claimed[m->rank]].from, jo->from);
  } else if ((int)m->naddrs != s->naddrs) {
    snprintf(s->why, sizeof s->why,
             "rank %u (%s) listens on %u address(es), "
             "rank 0 on %d: set DISTCOMM_IFNAME alike on every rank",
             m->rank, jo->from, m->naddrs, s->naddrs);
  } else if (parse_lines(jo->payload, m->len, &s->table[m->rank * s->naddrs],
                         s->naddrs, why, sizeof why) != DC_OK) {
    snprintf(s->why, sizeof s->why, "rank %u (%s) sent a bad address: %s",
             m->rank, jo->from, why);
  } else {
    jo->rank = (int)m->rank;
    s->claimed[m->rank] = k;
    s->joined++;
    msg ack = {.kind = K_ACK, .rank = m->rank, .size = m->size};
    send_msg(jo->fd, &ack, NULL, dc_now() + 1.0);
    return;
  }
  if (s->why[0])
    jo->rank = -2;
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
    if (jo->have == HDR && (decode(jo->hdr, &jo->m) != 0 ||
                            !(jo->payload = malloc(jo->m.len + 1)))) {
      if (decode(jo->hdr, &jo->m) == -2)
        snprintf(s->why, sizeof s->why,
                 "the process at %s speaks another "
                 "rendezvous version (%u): mixed distcomm versions?",
                 jo->from, (unsigned)dc_get16(jo->hdr + 4));
      drop(jo);
      return;
    }
    done = jo->have == HDR + jo->m.len && jo->have >= HDR;
  }
  if (done)
    admit(s, k);
}

static void take(server *s) {
  for (;;) {
    int fd;
    char from[64], why[128];
    struct pollfd p = {.fd = s->lfd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0 ||
        dc_sock_accept(s->lfd, dc_now(), &fd, from, sizeof from, why,
                       sizeof why) != DC_OK)
      return;
    if (s->protect && !dc_sock_peer_is_us(fd)) {
      refused(s, from,
              "no job token, so only this host's processes of this user may "
              "join");
      close(fd);
      continue;
    }
    if (s->nj == s->cap) {
      int cap = s->cap ? 2 * s->cap : 16;
      joiner *j = realloc(s->j, sizeof *j * (size_t)cap);
      if (!j) {
        close(fd);
        return;
      }
      s->j = j;
      s->cap = cap;
    }
    s->j[s->nj] = (joiner){.fd = fd, .rank = -1, .since = dc_now()};
    snprintf(s->j[s->nj].from, sizeof s->j[s->nj].from, "%s", from);
    s->nj++;
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
  pf[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
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
        dc_now() - s->j[k].since > JOIN_SECONDS)
      drop(&s->j[k]);
  free(pf);
  free(map);
}

static void missing(server *s, double timeout) {
  s->timed_out = 1;
  size_t at =
      (size_t)snprintf(s->why, sizeof s->why,
                       "the rendezvous at %s timed out after %.0f s "
                       "with %d of %d ranks: missing rank(s)",
                       s->c->addr.text, timeout, s->joined + 1, s->c->size);
  int shown = 0;
  for (int r = 1; r < s->c->size && at < sizeof s->why - 16; r++)
    if (s->claimed[r] < 0 && shown++ < 16)
      at += (size_t)snprintf(s->why + at, sizeof s->why - at, " %d", r);
  if (shown > 16)
    at += (size_t)snprintf(s->why + at, sizeof s->why - at, " and %d more",
                           shown - 16);
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
  if (!s->why[0]) {
    text = lines(s->table, s->c->size * s->naddrs, &m.len);
    if (!text)
      snprintf(s->why, sizeof s->why, "out of memory");
  }
  if (s->why[0]) {
    free(text);
    text = s->why;
    m.len = (uint32_t)strlen(s->why);
  }
  dc_status st = s->timed_out ? DC_ERR_TIMEOUT : DC_ERR_CONFIG;
  m.kind = s->why[0] ? K_ERROR : K_TABLE;
  if (s->why[0])
    m.job = (uint64_t)st;           /* an ERROR's job field: the status */
  double deadline = dc_now() + 5.0; /* each joiner is waiting to read */
  for (int k = 0; k < s->nj; k++)
    if (s->j[k].fd >= 0 && (s->j[k].rank >= 0 || s->j[k].rank == -2)) {
      m.rank = (uint32_t)s->j[k].rank;
      send_msg(s->j[k].fd, &m, text, deadline);
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

static dc_status serve(const dc_coord *c, const dc_addr *mine, int n,
                       double deadline, int protect, dc_hostfile *all,
                       uint64_t *job, char *err, size_t errlen) {
  double timeout = deadline - dc_now();
  server s = {.c = c, .naddrs = n, .protect = protect};
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
    while (s.joined < c->size - 1 && !s.why[0] && dc_now() < deadline)
      serve_round(&s, deadline);
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

/* Rank 0's TABLE or ERROR; h holds its header when it came first (no ACK
 * before an ERROR for the JOIN that caused it). */
static dc_status verdict(const dc_coord *c, int fd, int n, double deadline,
                         unsigned char h[HDR], int have, dc_hostfile *all,
                         uint64_t *job, char *err, size_t errlen) {
  msg m;
  dc_status st =
      have ? DC_OK : dc_sock_read_all(fd, h, HDR, deadline + VERDICT_SLACK);
  int bad = st == DC_OK ? decode(h, &m) : 0;
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

/* The first answer to our JOIN, within ACK_SECONDS, into h: 1 an ACK, 2 a
 * verdict already, 0 nothing or a close (dial again), -1 not ours. */
#define ACK_SECONDS 5.0
static int acked(int fd, const dc_coord *c, const dc_addr *mine, int n,
                 double deadline, unsigned char h[HDR]) {
  msg m = {.kind = K_JOIN,
           .rank = (uint32_t)c->rank,
           .size = (uint32_t)c->size,
           .naddrs = (uint32_t)n};
  char *text = lines(mine, n, &m.len);
  dc_status st = text ? send_msg(fd, &m, text, deadline) : DC_ERR_NOMEM;
  free(text);
  if (st != DC_OK)
    return 0;
  double until = dc_now() + ACK_SECONDS;
  if (dc_sock_read_all(fd, h, HDR, until < deadline ? until : deadline) !=
      DC_OK)
    return 0;
  if (decode(h, &m) != 0)
    return -1;
  return m.kind == K_ACK ? 1 : 2;
}

static dc_status join(const dc_coord *c, const dc_addr *mine, int n,
                      double deadline, dc_hostfile *all, uint64_t *job,
                      char *err, size_t errlen) {
  double timeout = deadline - dc_now();
  for (int tries = 0; dc_now() < deadline; tries++) {
    int fd, got;
    char why[200];
    unsigned char h[HDR];
    if (tries)
      usleep(200000);
    if (dc_sock_connect(&c->addr, deadline, &fd, why, sizeof why) != DC_OK)
      break;
    got = acked(fd, c, mine, n, deadline, h);
    if (got > 0) {
      dc_status st =
          verdict(c, fd, n, deadline, h, got == 2, all, job, err, errlen);
      close(fd);
      return st;
    }
    close(fd);
    if (got < 0) {
      snprintf(err, errlen,
               "the process at %s (%s) is not a distcomm "
               "coordinator of this version",
               c->addr.text, c->from);
      return DC_ERR_CONFIG;
    }
  }
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
  dc_auth_clear(&auth);
  if (protect && c->rank != 0 && !dc_addr_is_ours(&c->addr)) {
    snprintf(err, errlen,
             "the coordinator %s (%s) is on another host and the job has "
             "no job token (without one it lets in only this host's "
             "processes of this user): %s",
             c->addr.text, c->from, dc_how_to_token());
    return DC_ERR_CONFIG;
  }
  return c->rank == 0
             ? serve(c, mine, n, deadline, protect, all, job, err, errlen)
             : join(c, mine, n, deadline, all, job, err, errlen);
}
