/* Building a group's connections: rank r connects to every lower rank and
 * accepts every higher one, lanes connections per pair. Connecting only
 * downwards cannot deadlock: a connect completes in the listener's backlog
 * before the lower rank gets round to accepting it. */
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "backends/ring/ring.h"
#include "transport/frame.h"
#include "transport/sock.h"

#define HELLO_SECONDS 2.0 /* a silent stranger cannot stall setup longer */

static dc_hello hello_of(const ring_plan *p, uint32_t kind, int lane) {
  return (dc_hello){.kind = kind, .version = DC_WIRE_VERSION, .job = p->job,
                    .group = p->group, .rank = (uint32_t)p->rank,
                    .size = (uint32_t)p->size, .lane = (uint32_t)lane,
                    .host = p->host};
}

static dc_status say(int fd, const dc_hello *h, double deadline) {
  unsigned char b[DC_HELLO_BYTES];
  dc_hello_encode(h, b);
  return dc_sock_write_all(fd, b, sizeof b, deadline);
}

static dc_status hear(int fd, dc_hello *h, double deadline) {
  unsigned char b[DC_HELLO_BYTES];
  dc_status st = dc_sock_read_all(fd, b, sizeof b, deadline);
  return st == DC_OK ? dc_hello_decode(b, h) : st;
}

static dc_status connect_one(dc_group *g, dc_tcp *t, const ring_plan *p,
                             int q, int lane, double deadline, char *err,
                             size_t errlen) {
  const dc_addr *a = ring_addr(p, q, lane);
  int fd;
  dc_status st = dc_sock_connect(a, deadline, &fd, err, errlen);
  if (st != DC_OK) {
    snprintf(err, errlen, "rank %d could not connect to rank %d (%s) before "
             "the timeout (%.0f s): is rank %d running?",
             p->rank, q, a->text, g->timeout_s, q);
    return st;
  }
  dc_hello mine = hello_of(p, DC_HELLO, lane), reply;
  st = say(fd, &mine, deadline);
  if (st == DC_OK)
    st = hear(fd, &reply, deadline);
  if (st == DC_OK && reply.kind != DC_HELLO_OK) {
    snprintf(err, errlen, "rank %d (%s) refused rank %d's connection: %s",
             q, a->text, p->rank, dc_hello_reason_text(reply.reason));
    close(fd);
    return DC_ERR_CONFIG;
  }
  if (st != DC_OK) {
    snprintf(err, errlen, "rank %d (%s) did not complete the handshake: %s",
             q, a->text, dc_strerror(st));
    close(fd);
    return st;
  }
  dc_conn *k = &t->conns[q * ring_lanes(p) + lane];
  k->fd = fd;
  k->host = reply.host;
  snprintf(k->addr, sizeof k->addr, "%s", a->text);
  dc_log(g, "connected to rank %d lane %d at %s", q, lane, a->text);
  return DC_OK;
}

/* Why a hello that came to listener l cannot be accepted, or
 * DC_REFUSE_NONE. */
static uint32_t judge(dc_tcp *t, const ring_plan *p, const dc_hello *h,
                      int l) {
  if (h->kind != DC_HELLO || h->version != DC_WIRE_VERSION)
    return DC_REFUSE_VERSION;
  if (h->job != p->job || h->group != p->group)
    return DC_REFUSE_JOB;
  if (h->size != (uint32_t)p->size)
    return DC_REFUSE_SIZE;
  if (h->rank <= (uint32_t)p->rank || h->rank >= (uint32_t)p->size ||
      h->lane >= (uint32_t)ring_lanes(p) ||
      h->lane % (uint32_t)p->naddrs != (uint32_t)l ||
      t->conns[h->rank * (uint32_t)ring_lanes(p) + h->lane].fd >= 0)
    return DC_REFUSE_RANK;
  return DC_REFUSE_NONE;
}

/* Accept one connection on listener l; 1 if it joined the group. */
static int accept_one(dc_group *g, dc_tcp *t, const ring_plan *p, int l,
                      double deadline) {
  int fd;
  char from[64], err[128];
  if (dc_sock_accept(p->listen_fds[l], deadline, &fd, from, sizeof from,
                     err, sizeof err) != DC_OK)
    return 0;
  double hd = dc_now() + HELLO_SECONDS;
  dc_hello h;
  dc_status st = hear(fd, &h, hd < deadline ? hd : deadline);
  uint32_t why = st == DC_OK ? judge(t, p, &h, l) : DC_REFUSE_VERSION;
  dc_hello reply = hello_of(p, why ? DC_HELLO_REFUSED : DC_HELLO_OK, l);
  reply.reason = why;
  if (st == DC_OK)
    say(fd, &reply, dc_now() + HELLO_SECONDS);
  if (why) {
    dc_log(g, "refused a connection from %s: %s", from,
           st == DC_OK ? dc_hello_reason_text(why) : "no valid hello");
    close(fd);
    return 0;
  }
  dc_conn *k = &t->conns[h.rank * (uint32_t)ring_lanes(p) + h.lane];
  k->fd = fd;
  k->host = h.host;
  snprintf(k->addr, sizeof k->addr, "%s",
           ring_addr(p, (int)h.rank, (int)h.lane)->text);
  dc_log(g, "accepted rank %u lane %u from %s", h.rank, h.lane, from);
  return 1;
}

static int first_missing(const dc_tcp *t, const ring_plan *p) {
  for (int q = p->rank + 1; q < p->size; q++)
    for (int l = 0; l < ring_lanes(p); l++)
      if (t->conns[q * ring_lanes(p) + l].fd < 0)
        return q;
  return -1;
}

static dc_status accept_all(dc_group *g, dc_tcp *t, const ring_plan *p,
                            double deadline, char *err, size_t errlen) {
  int want = (p->size - 1 - p->rank) * ring_lanes(p);
  struct pollfd pf[64];
  int nl = p->naddrs < 64 ? p->naddrs : 64;
  while (want > 0) {
    double left = deadline - dc_now();
    if (left <= 0) {
      int q = first_missing(t, p);
      snprintf(err, errlen, "rank %d timed out after %.0f s waiting for rank "
               "%d (%s) to connect: is rank %d running?",
               p->rank, g->timeout_s, q, ring_addr(p, q, 0)->text, q);
      return DC_ERR_TIMEOUT;
    }
    for (int l = 0; l < nl; l++)
      pf[l] = (struct pollfd){.fd = p->listen_fds[l], .events = POLLIN};
    poll(pf, (nfds_t)nl, left > 0.1 ? 100 : (int)(left * 1000) + 1);
    for (int l = 0; l < nl; l++)
      if (pf[l].revents & POLLIN)
        want -= accept_one(g, t, p, l, deadline);
  }
  return DC_OK;
}

dc_status ring_connect(dc_group *g, dc_tcp *t, const ring_plan *p, char *err,
                       size_t errlen) {
  double deadline = dc_now() + g->timeout_s;
  for (int q = 0; q < p->rank; q++)
    for (int l = 0; l < ring_lanes(p); l++) {
      dc_status st = connect_one(g, t, p, q, l, deadline, err, errlen);
      if (st != DC_OK)
        return st;
    }
  return accept_all(g, t, p, deadline, err, errlen);
}
