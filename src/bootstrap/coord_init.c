/* The world ring group without a hostfile: rank, size and one coordinator
 * address from the environment (bootstrap/coordinator.h). Each rank listens
 * on ports the kernel picks, the rendezvous gives every rank's, and set-up
 * goes on as from a hostfile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/native/native.h"
#include "bootstrap/coordinator.h"
#include "config/env.h"
#include "transport/auth.h"
#include "transport/sock.h"

static void close_all(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
}

dc_status dc_world_listen(int rank, dc_addr *mine, int n, int *fds, int *twins,
                          char *err, size_t errlen) {
  for (int i = 0; i < n; i++) {
    char why[200];
    dc_status st =
        dc_sock_listen_twin(&mine[i], &fds[i], &twins[i], why, sizeof why);
    if (st != DC_OK) {
      snprintf(err, errlen, "rank %d %s", rank, why);
      close_all(fds, i);
      close_all(twins, i);
      return st;
    }
  }
  return DC_OK;
}

void dc_world_unlisten(int *fds, int *twins, int n) {
  close_all(fds, n);
  close_all(twins, n);
}

dc_status dc_world_build(int rank, int size, const dc_addr *mine, int n,
                         int *fds, int *twins, dc_hostfile *all, uint64_t job,
                         double timeout, dc_group **out, char *err,
                         size_t errlen) {
  dc_engine_plan p = {.rank = rank,
                      .size = size,
                      .naddrs = n,
                      .sockets = ring_sockets(all->addrs, size, n),
                      .addrs = all->addrs,
                      .listen_fds = fds,
                      .twin_fds = twins,
                      .job = job,
                      .group = 1,
                      .neighbours = ring_neighbours_env()};
  dc_status st = ring_build(&p, mine, timeout, out, err, errlen);
  if (st == DC_OK) /* the first listener stays open for dc_group_shrink */
    ring_keep_listeners(*out, fds, 1, all->addrs, n);
  dc_hostfile_free(all);
  close_all(fds + (st == DC_OK), n - (st == DC_OK));
  close_all(twins, n);
  return st;
}

static dc_status build(const dc_coord *c, double timeout, dc_group **out,
                       char *err, size_t errlen) {
  dc_addr mine[DC_HOSTFILE_MAX_ADDRS];
  int fds[DC_HOSTFILE_MAX_ADDRS], twins[DC_HOSTFILE_MAX_ADDRS], n = 0;
  dc_status st =
      dc_coord_local_addrs(c, mine, DC_HOSTFILE_MAX_ADDRS, &n, err, errlen);
  if (st == DC_OK)
    st = dc_world_listen(c->rank, mine, n, fds, twins, err, errlen);
  if (st != DC_OK)
    return st;
  dc_hostfile all;
  uint64_t job;
  st = dc_coord_rendezvous(c, mine, n, dc_now() + timeout, &all, &job, err,
                           errlen);
  if (st != DC_OK) {
    dc_world_unlisten(fds, twins, n);
    return st;
  }
  return dc_world_build(c->rank, c->size, mine, n, fds, twins, &all, job,
                        timeout, out, err, errlen);
}

dc_status dc_ring_coord_init(dc_group **out) {
  *out = NULL;
  char err[700];
  dc_coord c;
  dc_status st = dc_coord_from_env(&c, err, sizeof err);
  if (st == DC_ERR_UNAVAILABLE)
    return dc_init_fail(st, "init: no coordinator is configured (none of "
                            "MLX_JACCL_COORDINATOR, DISTCOMM_COORDINATOR, "
                            "MASTER_ADDR, PET_MASTER_ADDR, "
                            "SLURM_STEP_NODELIST is set)");
  if (st == DC_OK)
    dc_coord_note_no_token(&c);
  dc_auth auth; /* a bad token (file) fails now, not after the rendezvous */
  if (st == DC_OK && (st = dc_auth_from_env(&auth, err, sizeof err)) == DC_OK)
    dc_auth_clear(&auth);
  if (st == DC_OK)
    st = build(&c, dc_default_timeout(), out, err, sizeof err);
  if (st != DC_OK)
    return dc_init_fail(st, "init: %s", err);
  ring_impl *R = (*out)->impl;
  dc_log(*out,
         "ring ready by coordinator %s (%s): rank %d of %d, %d "
         "connection(s) per peer",
         c.addr.text, c.from, c.rank, c.size, R->naddrs * R->sockets);
  return DC_OK;
}
