/* A native group from a plan whose listeners are open (ring_build), for
 * every bootstrap (src/bootstrap) and split; lanes per pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <unistd.h>

#include "algo/tune.h"
#include "backends/native/native.h"
#include "config/env.h"
#include "transport/shm.h"
#include "transport/sock.h"

static size_t self_count(const dc_engine_plan *p) {
  return (size_t)p->naddrs * (p->per_peer ? (size_t)p->size : 1);
}

/* Addresses equal but for the port (listening writes the port in). */
static int same_addr(const dc_addr *a, const dc_addr *b) {
  const struct sockaddr_in *a4 = (const void *)&a->sa,
                           *b4 = (const void *)&b->sa;
  const struct sockaddr_in6 *a6 = (const void *)&a->sa,
                            *b6 = (const void *)&b->sa;
  if (a->sa.ss_family != b->sa.ss_family)
    return 0;
  if (a->sa.ss_family == AF_INET)
    return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
  return memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof a6->sin6_addr) == 0 &&
         a6->sin6_scope_id == b6->sin6_scope_id;
}

dc_status ring_listen_each(dc_addr *mine, int n, int *fds, int *nfds,
                           int *which, char *err, size_t errlen) {
  *nfds = 0;
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < i && !same_addr(&mine[j], &mine[i]))
      j++;
    if (j < i) { /* the port is set below, once its listener has one */
      which[i] = which[j];
      continue;
    }
    char why[160];
    dc_status st = dc_sock_listen(&mine[i], &fds[*nfds], why, sizeof why);
    if (st != DC_OK) {
      snprintf(err, errlen, "%s", why);
      while (*nfds > 0)
        close(fds[--*nfds]);
      return st;
    }
    which[i] = (*nfds)++;
  }
  for (int i = 0; i < n; i++) /* every copy gets its listener's port */
    for (int j = 0; j < i; j++)
      if (which[j] == which[i]) {
        mine[i] = mine[j];
        break;
      }
  return DC_OK;
}

/* Every rank of a one-host group keeps a tuner, also one that cannot
 * pull: the tuner's schedule says which calls vote (algo/tune.h), so all
 * ranks must run it alike; this one's votes are always the pipes. Without
 * memory for it set-up fails: a rank without a tuner would vote on every
 * call while the others keep the schedule. */
static dc_status new_tuner(ring_impl *R, char *err, size_t errlen) {
  if (!R->tcp->one_host)
    return DC_OK;
  if ((R->tune = dc_tune_new(R->tcp->pull_forced)) != NULL)
    return DC_OK;
  snprintf(err, errlen, "no memory for the single-copy tuner at set-up");
  return DC_ERR_NOMEM;
}

dc_status ring_build(const dc_engine_plan *p, const dc_addr *self,
                     double timeout, dc_group **out, char *err, size_t errlen) {
  *out = NULL;
  ring_impl *R = calloc(1, sizeof *R);
  dc_group *g = R ? dc_group_new(p->per_peer ? &dc_mesh_ops : &dc_ring_ops, R,
                                 p->rank, p->size, p->group)
                  : NULL;
  if (R) {
    R->naddrs = p->naddrs;
    R->sockets = p->sockets;
    R->job = p->job;
    R->neighbours = dc_plan_neighbours_only(p);
    R->per_peer = p->per_peer;
    R->direct_ranks = (int)dc_env_int(DC_ENV_DIRECT_RANKS);
    R->self = malloc(sizeof *R->self * self_count(p));
  }
  if (!g || !R->self) {
    snprintf(err, errlen, "out of memory");
    if (g)
      dc_group_free(g);
    else
      free(R);
    return DC_ERR_NOMEM;
  }
  memcpy(R->self, self, sizeof *R->self * self_count(p));
  g->timeout_s = timeout;
  g->op_name = ""; /* the hooks' detail unprefixed: the caller names the op */
  dc_engine_plan plan = *p;
  plan.host = R->host = dc_host_key();
  /* The hooks need the group, so it exists first; R->tcp is set before
   * connecting, so that a failure the hooks report poisons the mesh. */
  dc_engine_hooks h = dc_group_hooks(g);
  dc_status st = dc_engine_open(&h, &plan, &R->tcp, err, errlen);
  if (st != DC_OK && !err[0]) /* the hooks reported it */
    snprintf(err, errlen, "%s", g->err);
  g->op_name = NULL;
  if (st == DC_OK)
    st = new_tuner(R, err, errlen);
  if (st != DC_OK) {
    dc_group_free(g);
    return st;
  }
  *out = g;
  return DC_OK;
}

int ring_neighbours_env(void) { return dc_env_flag(DC_ENV_RING_NEIGHBOURS); }

/* A second socket per pair only stripes large point-to-point messages, and
 * many ranks on one host share its cores anyway; there it doubled set-up:
 * 65 280 connections at 256 ranks (bench/scale/many-ranks.md). */
#define ONE_HOST_RANKS 16

int ring_sockets(const dc_addr *addrs, int size, int naddrs) {
  int n = (int)dc_env_int(DC_ENV_SOCKETS);
  const char *set = dc_env_str(DC_ENV_SOCKETS);
  if ((set && *set) || !addrs || size <= ONE_HOST_RANKS)
    return n;
  for (int r = 1; r < size; r++)
    if (!dc_sock_same_ip(&addrs[0].sa, &addrs[r * naddrs].sa))
      return n;
  return 1;
}
