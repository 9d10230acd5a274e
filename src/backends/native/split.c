/* Split on the ring: the members open new listeners on their own IPs, tell
 * each other where through the parent's connections, and connect a mesh of
 * their own, so subgroups run collectives side by side. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "transport/frame.h"
#include "transport/sock.h"

static void port0(dc_addr *a) {
  if (a->sa.ss_family == AF_INET6)
    ((struct sockaddr_in6 *)&a->sa)->sin6_port = 0;
  else
    ((struct sockaddr_in *)&a->sa)->sin_port = 0;
}

/* Swap address texts with every other member over the parent. */
static dc_status swap_addrs(dc_group *g, const int *ranks, int n, int me,
                            char *texts, size_t block) {
  dc_comm c;
  dc_engine_begin(((ring_impl *)g->impl)->tcp, &c, DC_OPC_SPLIT, block,
                  DC_UINT8, DC_SUM, 0, (uint32_t)g->seq);
  dc_xfer *x = malloc(sizeof *x * 2 * (size_t)n);
  if (!x)
    return DC_ERR_NOMEM;
  int k = 0;
  for (int q = 0; q < n; q++) {
    if (q == me)
      continue;
    x[k++] = dc_xsend(ranks[q], 0, texts + (size_t)me * block, block);
    x[k++] = dc_xrecv(ranks[q], 0, texts + (size_t)q * block, block);
  }
  dc_status st = c.run(&c, x, k);
  free(x);
  return st;
}

/* The subgroup's own listeners, on the addresses this member had in the
 * parent: one per address, or (the mesh) one per distinct address towards
 * the members, with which[] saying whose link arrives where. */
typedef struct split_self {
  int n; /* addresses this member publishes */
  dc_addr *mine;
  int *fds, nfds, *which;
} split_self;

static dc_status open_listeners(dc_group *g, ring_impl *R, const int *ranks,
                                int nr, int me, split_self *S) {
  char why[160];
  S->n = R->naddrs * (R->per_peer ? nr : 1);
  S->mine = calloc((size_t)S->n, sizeof *S->mine);
  S->fds = calloc((size_t)S->n, sizeof *S->fds);
  S->which = calloc((size_t)S->n, sizeof *S->which);
  if (!S->mine || !S->fds || !S->which)
    return dc_fail(g, DC_ERR_NOMEM, "no memory");
  for (int i = 0; i < S->n; i++) {
    int j = i / R->naddrs, k = i % R->naddrs;
    /* towards myself: any of my addresses (never dialed) */
    int peer = R->per_peer ? ranks[j == me ? (me + 1) % nr : j] : 0;
    S->mine[i] = R->self[R->per_peer ? peer * R->naddrs + k : i];
    port0(&S->mine[i]);
  }
  if (R->per_peer) {
    if (ring_listen_each(S->mine, S->n, S->fds, &S->nfds, S->which, why,
                         sizeof why) != DC_OK)
      return dc_fail(g, DC_ERR_SYSTEM, "%s", why);
    return DC_OK;
  }
  for (; S->nfds < S->n; S->nfds++)
    if (dc_sock_listen(&S->mine[S->nfds], &S->fds[S->nfds], why, sizeof why) !=
        DC_OK)
      return dc_fail(g, DC_ERR_SYSTEM, "%s", why);
  return DC_OK;
}

static void close_listeners(split_self *S) {
  for (int i = 0; S->fds && i < S->nfds; i++)
    close(S->fds[i]);
  free(S->mine);
  free(S->fds);
  free(S->which);
}

/* Slots come from peers: each must hold a NUL-terminated address. */
dc_status ring_parse_slots(const char *texts, int count, dc_addr *addrs,
                           char *why, size_t whylen) {
  for (int i = 0; i < count; i++) {
    const char *slot = texts + (size_t)i * RING_ADDR_SLOT;
    if (!memchr(slot, '\0', RING_ADDR_SLOT)) {
      snprintf(why, whylen, "address %d is not terminated within %d bytes", i,
               RING_ADDR_SLOT);
      return DC_ERR_MISMATCH;
    }
    if (dc_addr_parse(slot, 0, &addrs[i], why, whylen) != DC_OK)
      return DC_ERR_MISMATCH;
  }
  return DC_OK;
}

static dc_status parse_all(dc_group *g, const char *texts, int count,
                           dc_addr *addrs) {
  char why[160];
  if (ring_parse_slots(texts, count, addrs, why, sizeof why) != DC_OK)
    return dc_fail(g, DC_ERR_MISMATCH, "a member sent a bad address: %s", why);
  return DC_OK;
}

static dc_status connect_members(dc_group *g, ring_impl *R, const int *ranks,
                                 int n, int me, uint64_t id, split_self *S,
                                 dc_group **out) {
  size_t block = (size_t)S->n * RING_ADDR_SLOT;
  char *texts = calloc((size_t)n, block);
  dc_addr *addrs = calloc((size_t)n * (size_t)S->n, sizeof *addrs);
  dc_status st = texts && addrs ? DC_OK : dc_fail(g, DC_ERR_NOMEM, "no memory");
  for (int l = 0; st == DC_OK && l < S->n; l++)
    snprintf(texts + (size_t)me * block + (size_t)l * RING_ADDR_SLOT,
             RING_ADDR_SLOT, "%s", S->mine[l].text);
  if (st == DC_OK)
    st = swap_addrs(g, ranks, n, me, texts, block);
  if (st == DC_OK)
    st = parse_all(g, texts, n * S->n, addrs);
  if (st == DC_OK) {
    dc_engine_plan p = {.rank = me,
                        .size = n,
                        .naddrs = R->naddrs,
                        .sockets = R->sockets,
                        .addrs = addrs,
                        .listen_fds = S->fds,
                        .job = R->job,
                        .group = id,
                        .per_peer = R->per_peer,
                        .nlisten = S->nfds,
                        .listener = S->which};
    char err[400];
    st = ring_build(&p, S->mine, g->timeout_s, out, err, sizeof err);
    if (st != DC_OK)
      dc_fail(g, st, "%s", err);
  }
  if (st == DC_OK) { /* the subgroup can shrink on them; the mesh dials
                        each member at its address towards me */
    size_t at = R->per_peer ? (size_t)me * (size_t)R->naddrs : 0;
    ring_keep_listeners(*out, S->fds, S->nfds, addrs + at, S->n);
    S->nfds = 0;
  }
  free(texts);
  free(addrs);
  return st;
}

dc_status ring_split(dc_group *g, const int *ranks, int n, int me, uint64_t id,
                     dc_group **out) {
  ring_impl *R = g->impl;
  if (R->neighbours)
    return dc_fail(g, DC_ERR_NOT_SUPPORTED,
                   "split is not supported when only ring neighbours are "
                   "connected (DISTCOMM_RING_NEIGHBOURS=1 or jaccl-ring): a "
                   "subgroup's members may have no link between them");
  split_self S = {0};
  dc_status st = open_listeners(g, R, ranks, n, me, &S);
  if (st == DC_OK)
    st = connect_members(g, R, ranks, n, me, id, &S, out);
  close_listeners(&S);
  return st;
}
