/* distcomm-config: mlx.distributed_config for Linux. Asks every host over
 * ssh for its interfaces, then writes an ethernet hostfile, or finds the
 * direct links (direct.c) and writes a ring or mesh hostfile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "hostinfo.h"
#include "remote.h"
#include "run.h"

/* --ignore-unreachable: host h leaves the list (the others keep their order).
 */
static void drop_host(struct dcc_topo *t, struct dcc_job *jobs, int h) {
  char why[1200];
  dcc_error("leaving out %s (--ignore-unreachable): %s", t->hosts[h].ssh,
            dcc_job_why(&jobs[h], why, sizeof why));
  dcc_jobs_free(&jobs[h], 1);
  memmove(&t->hosts[h], &t->hosts[h + 1],
          (size_t)(t->nhosts - h - 1) * sizeof t->hosts[0]);
  memmove(&jobs[h], &jobs[h + 1], (size_t)(t->nhosts - h - 1) * sizeof jobs[0]);
  t->nhosts--;
}

/* Every host at once: its ssh address and `ip -j addr`. Names every host
 * that could not be reached or answered oddly. */
static int gather(struct dcc_topo *t, bool ignore_unreachable) {
  struct dcc_job jobs[DCC_MAX_HOSTS];
  for (int h = 0; h < t->nhosts; h++)
    jobs[h] =
        (struct dcc_job){.host = t->hosts[h].ssh, .script = dcc_info_script};
  dcc_ssh_all(jobs, t->nhosts, 30, "checking hosts");
  for (int h = t->nhosts - 1; ignore_unreachable && h >= 0; h--)
    if (jobs[h].status != 0)
      drop_host(t, jobs, h);
  if (t->nhosts == 0) {
    dcc_error("none of the hosts can be reached over ssh");
    return -1;
  }
  int bad = 0;
  for (int h = 0; h < t->nhosts; h++) {
    char why[1200], err[256];
    if (jobs[h].status != 0)
      dcc_error("cannot reach %s over ssh (%s)", t->hosts[h].ssh,
                dcc_job_why(&jobs[h], why, sizeof why));
    else if (dcc_hostinfo_parse(jobs[h].out ? jobs[h].out : "", &t->hosts[h],
                                err, sizeof err) != 0)
      dcc_error("%s: %s", t->hosts[h].ssh, err);
    else
      continue;
    bad++;
  }
  dcc_jobs_free(jobs, t->nhosts);
  return bad ? -1 : 0;
}

static void emit_ethernet(FILE *f, const void *t) { dcc_emit_ethernet(f, t); }

static int run_ethernet(const struct dcc_options *o, struct dcc_topo *t) {
  if (o->dot) {
    dcc_emit_dot(stdout, t);
    return 0;
  }
  for (int h = 0; h < t->nhosts; h++)
    if (dcc_ethernet_addr(&t->hosts[h], t->nhosts) == 0) {
      dcc_error("%s has no IPv4 address on an up interface", t->hosts[h].ssh);
      return 1;
    }
  return dcc_write_hostfile(o, emit_ethernet, t);
}

int main(int argc, char **argv) {
  struct dcc_options o;
  int rc = dcc_parse_options(argc, argv, &o);
  if (rc != 0)
    return rc > 0 ? 0 : 2;
  dcc_verbose = o.verbose;
  struct dcc_topo *t = calloc(1, sizeof *t);
  struct dcc_host *hosts = calloc((size_t)o.nhosts, sizeof *hosts);
  if (t == NULL || hosts == NULL) {
    dcc_error("out of memory");
    return 1;
  }
  t->hosts = hosts;
  t->nhosts = o.nhosts;
  t->envs = o.envs;
  t->nenvs = o.nenvs;
  for (int h = 0; h < o.nhosts; h++)
    snprintf(hosts[h].ssh, sizeof hosts[h].ssh, "%s", o.hosts[h]);
  if (gather(t, o.ignore_unreachable) != 0)
    rc = 1;
  else
    rc = o.direct ? dcc_run_direct(&o, t) : run_ethernet(&o, t);
  free(hosts);
  free(t);
  return rc;
}
