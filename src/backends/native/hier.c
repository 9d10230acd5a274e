/* When the ring's all_reduce goes hierarchical (compose/hier.h): ranks on two
 * or more hosts, the same number L >= 2 on each, every pair connected and
 * shared memory on (DISTCOMM_SHM). Hosts are told apart by the host keys
 * the hellos carried, which every rank knows alike, so every rank makes
 * the same choice from (count, dtype) and the same variables
 * (DISTCOMM_HIER, DISTCOMM_HIER_BYTES: like every variable, the same on
 * every rank, or the frames disagree and the op fails with a mismatch).
 * The two subgroups are split off at the first all_reduce that takes the
 * path: every rank calls collectives in the same order. */
#include <stdlib.h>
#include <string.h>

#include "compose/hier.h"
#include "backends/native/native.h"
#include "transport/shm.h"

struct ring_hier {
  int hosts, per_host; /* 0 hosts: the flat ring, always */
  int host, local;     /* this rank's host (in order of first rank), index */
  int built;
  dc_hier h;
};

/* Host number of every rank, in order of each host's first rank. */
static int number_hosts(dc_group *g, const ring_impl *R, int *host) {
  uint64_t *key = malloc(sizeof *key * (size_t)g->size);
  if (!key)
    return -1;
  int hosts = 0;
  for (int q = 0; q < g->size; q++) {
    key[q] = q == g->rank ? R->host : dc_engine_peer_host(R->tcp, q);
    host[q] = -1;
    for (int p = 0; p < q && host[q] < 0; p++)
      if (key[p] == key[q])
        host[q] = host[p];
    if (host[q] < 0)
      host[q] = hosts++;
  }
  free(key);
  return hosts;
}

/* Fill H from the topology; *why says why the flat ring stays, or NULL. */
static void look(dc_group *g, const ring_impl *R, struct ring_hier *H,
                 const char **why) {
  int *host = calloc((size_t)g->size, sizeof *host);
  int *per = calloc((size_t)g->size, sizeof *per);
  int hosts = host && per ? number_hosts(g, R, host) : -1;
  *why = hosts < 0 ? "no memory" : NULL;
  for (int q = 0; q < g->size && hosts > 0; q++) {
    if (q == g->rank)
      H->local = per[host[q]];
    per[host[q]]++;
  }
  for (int i = 1; i < hosts && !*why; i++)
    if (per[i] != per[0])
      *why = "hosts have different numbers of ranks";
  if (!*why && hosts == 1)
    *why = "one host";
  else if (!*why && per[0] == 1)
    *why = "one rank per host";
  else if (!*why && !dc_shm_enabled())
    *why = "DISTCOMM_SHM=0";
  if (!*why) {
    H->hosts = hosts;
    H->per_host = per[0];
    H->host = host[g->rank];
  }
  free(host);
  free(per);
}

static struct ring_hier *hier_of(dc_group *g) {
  ring_impl *R = g->impl;
  if (R->hier)
    return R->hier;
  if (!(R->hier = calloc(1, sizeof *R->hier)))
    return NULL;
  const char *why = "only ring neighbours are connected";
  if (!R->neighbours && !R->per_peer)
    look(g, R, R->hier, &why);
  if (!why)
    dc_log(g,
           "hierarchy: %d hosts x %d ranks, this one local rank %d of "
           "host %d",
           R->hier->hosts, R->hier->per_host, R->hier->local, R->hier->host);
  else if (strcmp(why, "one host") != 0) /* the usual case, not worth a line */
    dc_log(g, "hierarchy off: %s", why);
  return R->hier;
}

int ring_hier_takes(dc_group *g, size_t count, dc_dtype dtype) {
  ring_impl *R = g->impl;
  if (!R->hier_read) {
    R->hier_mode = dc_env_flag(DC_ENV_HIER);
    R->hier_bytes = (size_t)dc_env_int(DC_ENV_HIER_BYTES);
    R->hier_read = 1;
  }
  if (R->hier_mode == 0)
    return 0;
  struct ring_hier *H = hier_of(g);
  if (!H || !H->hosts || count < (size_t)H->per_host)
    return 0;
  return R->hier_mode > 0 || count * dc_dtype_size(dtype) >= R->hier_bytes;
}

/* local: the host's ranks (color = host); rail: local index i of every
 * host (color hosts + i, so the two colors never meet). */
static dc_status build(dc_group *g, struct ring_hier *H) {
  dc_status st = dc_split_within(g, H->host, g->rank, &H->h.local);
  if (st == DC_OK)
    st = dc_split_within(g, H->hosts + H->local, g->rank, &H->h.rail);
  if (st != DC_OK) {
    dc_group_free(H->h.local);
    H->h.local = NULL;
    return st;
  }
  H->built = 1;
  dc_log(g, "hierarchy: %s of %d: host group rank %d of %d, rail rank %d of %d",
         g->op_name, g->size, H->h.local->rank, H->h.local->size,
         H->h.rail->rank, H->h.rail->size);
  return DC_OK;
}

/* The subgroups wait as the parent does. */
static void follow(dc_group *sub, const dc_group *g) {
  sub->timeout_s = g->timeout_s;
  sub->interrupt = g->interrupt;
  sub->interrupt_arg = g->interrupt_arg;
  sub->verbose = g->verbose;
}

dc_status ring_hier_all_reduce(dc_group *g, const void *send, void *recv,
                               size_t count, dc_dtype dtype, dc_op op) {
  struct ring_hier *H = ((ring_impl *)g->impl)->hier;
  dc_status st = H->built ? DC_OK : build(g, H);
  if (st != DC_OK)
    return st;
  follow(H->h.local, g);
  follow(H->h.rail, g);
  dc_group *bad = NULL;
  char why[sizeof g->err];
  st = dc_hier_all_reduce(&H->h, send, recv, count, dtype, op, &bad, why,
                          sizeof why);
  if (st != DC_OK && bad)
    return dc_fail(g, st, "in the %s group (hierarchical): %s",
                   bad == H->h.local ? "host's" : "rail's", why);
  return st;
}

/* The parent failed: so do the subgroups, telling their peers, who may be
 * waiting there and not on the parent. */
void ring_hier_poison(dc_group *g) {
  struct ring_hier *H = ((ring_impl *)g->impl)->hier;
  dc_group *subs[2] = {H ? H->h.local : NULL, H ? H->h.rail : NULL};
  for (int i = 0; i < 2; i++) {
    if (!subs[i] || subs[i]->failed != DC_OK)
      continue;
    subs[i]->op_name = g->op_name;
    dc_fail(subs[i], g->failed, "the whole group failed: %s", g->err);
  }
}

void ring_hier_free(struct ring_hier *H) {
  if (!H)
    return;
  dc_group_free(H->h.local);
  dc_group_free(H->h.rail);
  free(H);
}
