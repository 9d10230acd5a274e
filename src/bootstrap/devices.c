/* The mesh backend, MLX's JACCL over TCP: every pair of ranks has links of
 * its own (MLX_IBV_DEVICES names, per pair, the interface that reaches the
 * peer), ranks find each other through one coordinator address
 * (MLX_JACCL_COORDINATOR), and the ring backend's groups, algorithms and
 * set-up run over those links: small all_sums take one exchange (every
 * rank sends to every rank, algo/direct.c), large ones the ring.
 * "jaccl-ring" (or MLX_JACCL_RING=1) connects ring neighbours only, as on a
 * ring of cables, and runs the ring algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "bootstrap/coordinator.h"
#include "config/devices.h"
#include "config/env.h"
#include "transport/auth.h"

typedef struct mesh_setup {
  dc_coord c;
  dc_devices d;
  int ring; /* jaccl-ring: neighbours only */
  int n;    /* c.size * d.links addresses of this rank */
  dc_addr *mine;
  int *fds, nfds, *which;
  int kept; /* the group holds fds (dc_group_shrink) */
} mesh_setup;

static int linked(const mesh_setup *m, int q) {
  int r = m->c.rank, size = m->c.size;
  if (q == r)
    return 0;
  return !m->ring || size <= 2 || q == (r + 1) % size ||
         q == (r + size - 1) % size;
}

/* This rank's address towards each peer on each link, from the interface
 * the matrix names; unlinked entries repeat a used address (never dialed). */
static dc_status local_addrs(mesh_setup *m, char *err, size_t errlen) {
  int r = m->c.rank, L = m->d.links, first = -1;
  for (int q = 0; q < m->c.size; q++)
    for (int k = 0; linked(m, q) && k < L; k++) {
      const char *dev = dc_device(&m->d, r, q, k);
      char why[160];
      if (!*dev) {
        snprintf(err, errlen,
                 "MLX_IBV_DEVICES: rank %d has no device towards "
                 "rank %d (entry [%d][%d] is null)%s",
                 r, q, r, q,
                 m->ring ? "" : "; a ring of cables needs jaccl-ring");
        return DC_ERR_CONFIG;
      }
      if (dc_iface_addr(dev, &m->mine[q * L + k], why, sizeof why) != DC_OK) {
        snprintf(err, errlen,
                 "MLX_IBV_DEVICES: rank %d's device towards rank "
                 "%d: %s",
                 r, q, why);
        return DC_ERR_CONFIG;
      }
      if (first < 0)
        first = q * L + k;
    }
  for (int i = 0; first >= 0 && i < m->n; i++)
    if (!linked(m, i / L))
      m->mine[i] = m->mine[first];
  return DC_OK;
}

static dc_status connect_mesh(mesh_setup *m, double timeout, dc_group **out,
                              char *err, size_t errlen) {
  dc_hostfile all;
  uint64_t job;
  int L = m->d.links;
  dc_status st = dc_coord_rendezvous(&m->c, m->mine, m->n, dc_now() + timeout,
                                     &all, &job, err, errlen);
  if (st != DC_OK)
    return st;
  dc_engine_plan p = {.rank = m->c.rank,
                      .size = m->c.size,
                      .naddrs = L,
                      .sockets = ring_sockets(NULL, m->c.size, L),
                      .addrs = all.addrs,
                      .listen_fds = m->fds,
                      .job = job,
                      .group = 1,
                      .neighbours = m->ring,
                      .per_peer = 1,
                      .nlisten = m->nfds,
                      .listener = m->which};
  st = ring_build(&p, m->mine, timeout, out, err, errlen);
  if (st == DC_OK && m->nfds > 0) { /* open for dc_group_shrink, which
                                       dials a rank's address towards me */
    ring_keep_listeners(*out, m->fds, m->nfds, all.addrs + m->c.rank * L, m->n);
    m->kept = 1;
  }
  dc_hostfile_free(&all);
  return st;
}

static dc_status setup(mesh_setup *m, char *err, size_t errlen) {
  m->n = m->c.size * m->d.links;
  if (m->n > DC_HOSTFILE_MAX_ADDRS) {
    snprintf(err, errlen,
             "the mesh has %d ranks x %d links: at most %d "
             "addresses per rank",
             m->c.size, m->d.links, DC_HOSTFILE_MAX_ADDRS);
    return DC_ERR_CONFIG;
  }
  m->mine = calloc((size_t)m->n, sizeof *m->mine);
  m->fds = calloc((size_t)m->n, sizeof *m->fds);
  m->which = calloc((size_t)m->n, sizeof *m->which);
  if (!m->mine || !m->fds || !m->which)
    return DC_ERR_NOMEM;
  if (m->c.size == 1) /* alone: no links, no listeners */
    return DC_OK;
  dc_status st = local_addrs(m, err, errlen);
  if (st == DC_OK)
    st = ring_listen_each(m->mine, m->n, m->fds, &m->nfds, m->which, err,
                          errlen);
  return st;
}

static void mesh_free(mesh_setup *m) {
  for (int i = 0; !m->kept && m->fds && i < m->nfds; i++)
    close(m->fds[i]);
  free(m->mine);
  free(m->fds);
  free(m->which);
  dc_devices_free(&m->d);
}

/* Under distcomm-launch (MLX_RANK + MLX_HOSTFILE, no coordinator variable)
 * rank 0's first hostfile address, which the launcher keeps free for it,
 * serves as the coordinator. */
static dc_status coord_from_hostfile(mesh_setup *m, char *err, size_t errlen) {
  const char *rn, *path = dc_env_hostfile(), *rs = dc_env_rank(&rn);
  if (!path || !*path || !rs || !*rs) {
    snprintf(err, errlen,
             "MLX_IBV_DEVICES is set but no coordinator is: set "
             "MLX_JACCL_COORDINATOR to the ip:port where rank 0 listens");
    return DC_ERR_CONFIG;
  }
  long rank;
  dc_hostfile hf;
  dc_status st = dc_env_parse_int(rn, rs, &rank, err, errlen);
  if (st == DC_OK && (st = dc_hostfile_load(path, &hf, err, errlen)) == DC_OK) {
    if (hf.nranks != m->d.n || rank >= hf.nranks) {
      snprintf(err, errlen,
               "MLX_HOSTFILE lists %d ranks, MLX_IBV_DEVICES has "
               "%d rows, MLX_RANK=%ld: they disagree",
               hf.nranks, m->d.n, rank);
      st = DC_ERR_CONFIG;
    }
    m->c = (dc_coord){.addr = hf.addrs[0],
                      .from = "MLX_HOSTFILE's rank 0",
                      .rank = (int)rank,
                      .size = hf.nranks};
    dc_hostfile_free(&hf);
  }
  return st == DC_ERR_UNAVAILABLE ? DC_ERR_CONFIG : st;
}

/* Rank, size and coordinator from the environment; the matrix gives the
 * size when no size variable does. */
static dc_status configure(mesh_setup *m, const char *devices, char *err,
                           size_t errlen) {
  dc_status st = dc_devices_load(devices, &m->d, err, errlen);
  if (st != DC_OK)
    return st == DC_ERR_UNAVAILABLE ? DC_ERR_CONFIG : st;
  st = dc_coord_from_env_sized(&m->c, m->d.n, "MLX_IBV_DEVICES", err, errlen);
  return st == DC_ERR_UNAVAILABLE ? coord_from_hostfile(m, err, errlen) : st;
}

static dc_status mesh_init(int ring, dc_group **out) {
  *out = NULL;
  const char *devices = dc_env_str(DC_ENV_IBV_DEVICES);
  if (!devices || !*devices)
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: the mesh (jaccl) needs "
                        "MLX_IBV_DEVICES and MLX_JACCL_COORDINATOR");
  char err[700];
  mesh_setup m = {.ring = ring || dc_env_flag(DC_ENV_JACCL_RING)};
  dc_status st = configure(&m, devices, err, sizeof err);
  if (st == DC_OK)
    dc_coord_note_no_token(&m.c);
  dc_auth auth; /* a bad token (file) fails now, not after the rendezvous */
  if (st == DC_OK && (st = dc_auth_from_env(&auth, err, sizeof err)) == DC_OK)
    dc_auth_clear(&auth);
  if (st == DC_OK)
    st = setup(&m, err, sizeof err);
  if (st == DC_ERR_NOMEM)
    snprintf(err, sizeof err, "out of memory");
  if (st == DC_OK)
    st = connect_mesh(&m, dc_default_timeout(), out, err, sizeof err);
  if (st == DC_OK)
    dc_log(*out,
           "mesh ready by coordinator %s (%s): rank %d of %d, %d "
           "link(s) per %s, %d listener(s)",
           m.c.addr.text, m.c.from, m.c.rank, m.c.size, m.d.links,
           m.ring ? "ring neighbour (jaccl-ring)" : "pair", m.nfds);
  mesh_free(&m);
  return st == DC_OK ? DC_OK : dc_init_fail(st, "init: %s", err);
}

dc_status dc_mesh_init(dc_group **out) { return mesh_init(0, out); }

dc_status dc_mesh_ring_init(dc_group **out) { return mesh_init(1, out); }
