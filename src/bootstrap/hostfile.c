/* The world ring group from MLX's variables: MLX_RANK and MLX_HOSTFILE. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "config/env.h"
#include "transport/sock.h"

/* The launcher gives every job an id; by hand, the hostfile names the job. */
static uint64_t job_id(const dc_hostfile *hf) {
  const char *s = dc_env_str(DC_ENV_JOB_ID);
  char *end;
  if (s && *s) {
    unsigned long long v = strtoull(s, &end, 16);
    if (*end == '\0')
      return v;
  }
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < hf->nranks * hf->naddrs; i++)
    for (const char *c = hf->addrs[i].text; *c; c++)
      h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
}

/* Each address's TCP listener and, beside it, the Unix socket where
 * same-host peers connect (fds[naddrs + l]). */
static dc_status listen_all(const dc_hostfile *hf, int rank, int *fds,
                            char *err, size_t errlen) {
  for (int l = 0; l < hf->naddrs; l++) {
    dc_addr a = hf->addrs[rank * hf->naddrs + l];
    char why[200];
    dc_status st =
        dc_sock_listen_twin(&a, &fds[l], &fds[hf->naddrs + l], why, sizeof why);
    if (st != DC_OK) {
      snprintf(err, errlen, "rank %d %s", rank, why);
      while (l-- > 0) {
        close(fds[l]);
        close(fds[hf->naddrs + l]);
      }
      return st;
    }
  }
  return DC_OK;
}

static dc_status start(const dc_hostfile *hf, int rank, dc_group **out,
                       char *err, size_t errlen) {
  int *fds = calloc(2 * (size_t)hf->naddrs, sizeof *fds);
  if (!fds)
    return DC_ERR_NOMEM;
  dc_status st =
      hf->nranks > 1 ? listen_all(hf, rank, fds, err, errlen) : DC_OK;
  if (st == DC_OK) {
    dc_engine_plan p = {.rank = rank,
                        .size = hf->nranks,
                        .naddrs = hf->naddrs,
                        .sockets =
                            ring_sockets(hf->addrs, hf->nranks, hf->naddrs),
                        .addrs = hf->addrs,
                        .listen_fds = fds,
                        .twin_fds = fds + hf->naddrs,
                        .job = job_id(hf),
                        .group = 1,
                        .neighbours = ring_neighbours_env()};
    st = ring_build(&p, &hf->addrs[rank * hf->naddrs], dc_default_timeout(),
                    out, err, errlen);
    /* the first listener stays open for dc_group_shrink */
    int kept = st == DC_OK && hf->nranks > 1;
    if (kept)
      ring_keep_listeners(*out, fds, 1, hf->addrs, hf->naddrs);
    for (int l = kept; hf->nranks > 1 && l < 2 * hf->naddrs; l++)
      close(fds[l]);
  }
  free(fds);
  return st;
}

dc_status dc_ring_init(dc_group **out) {
  *out = NULL;
  const char *rn, *rs = dc_env_rank(&rn), *path = dc_env_hostfile();
  if (!rs || !path)
    return dc_init_fail(DC_ERR_UNAVAILABLE,
                        "init: no backend is configured: the ring needs "
                        "MLX_RANK and MLX_HOSTFILE (missing:%s%s)",
                        rs ? "" : " MLX_RANK", path ? "" : " MLX_HOSTFILE");
  char err[400];
  long rank;
  dc_hostfile hf;
  dc_status st = dc_env_parse_int(rn, rs, &rank, err, sizeof err);
  if (st == DC_OK)
    st = dc_hostfile_load(path, &hf, err, sizeof err);
  if (st != DC_OK)
    return dc_init_fail(st, "init: %s", err);
  if (rank >= hf.nranks) {
    dc_init_fail(DC_ERR_CONFIG,
                 "init: %s=%ld is out of range: "
                 "%s %s lists %d ranks (0..%d)",
                 rn, rank,
                 dc_env_str(DC_ENV_HOSTFILE) ? "MLX_HOSTFILE"
                                             : "DISTCOMM_HOSTFILE",
                 path, hf.nranks, hf.nranks - 1);
    dc_hostfile_free(&hf);
    return DC_ERR_CONFIG;
  }
  st = start(&hf, (int)rank, out, err, sizeof err);
  dc_hostfile_free(&hf);
  if (st != DC_OK)
    return dc_init_fail(st, "init: %s", err);
  ring_impl *R = (*out)->impl;
  dc_log(*out, "ring ready: rank %ld of %d, %d connection(s) per %s", rank,
         (*out)->size, R->naddrs * R->sockets,
         R->neighbours ? "ring neighbour" : "peer");
  return DC_OK;
}
