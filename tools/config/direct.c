/* --over direct: find the point-to-point links, check that they make the
 * ring (or mesh) the backend needs, address them, write the hostfile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addrplan.h"
#include "emit.h"
#include "probe.h"
#include "remote.h"
#include "run.h"
#include "topo.h"

/* Every host probes its candidate interfaces at once (about 3-5 s). */
static int probe(struct dcc_topo *t) {
  struct dcc_job jobs[DCC_MAX_HOSTS];
  struct dcc_seen *seen = calloc((size_t)t->nhosts, sizeof *seen);
  if (seen == NULL)
    return -1;
  for (int h = 0; h < t->nhosts; h++)
    jobs[h] = (struct dcc_job){.host = t->hosts[h].ssh,
                               .script = dcc_probe_script(&t->hosts[h])};
  dcc_ssh_all(jobs, t->nhosts, 30, "probing links");
  int bad = 0;
  for (int h = 0; h < t->nhosts; h++) {
    char why[1200];
    if (jobs[h].script && jobs[h].status != 0) {
      dcc_error("probing the links of %s failed (%s)", t->hosts[h].ssh,
                dcc_job_why(&jobs[h], why, sizeof why));
      bad++;
    }
    dcc_probe_parse(jobs[h].out ? jobs[h].out : "", &t->hosts[h], &seen[h]);
    free((char *)jobs[h].script);
  }
  dcc_jobs_free(jobs, t->nhosts);
  if (bad == 0)
    dcc_links_build(t, seen);
  free(seen);
  return bad ? -1 : 0;
}

static const char *ifname(const struct dcc_topo *t, struct dcc_end e) {
  return t->hosts[e.host].ifs[e.ifc].name;
}

static void log_links(const struct dcc_topo *t) {
  if (!dcc_verbose)
    return;
  for (int k = 0; k < t->nlinks; k++) {
    const struct dcc_link *l = &t->links[k];
    fprintf(stderr, DCC_PROG ": link %s %s <-> %s %s\n",
            t->hosts[l->a.host].ssh, ifname(t, l->a), t->hosts[l->b.host].ssh,
            ifname(t, l->b));
  }
}

static void report_missing(const struct dcc_topo *t, int missing[][2], int n,
                           const char *what) {
  dcc_error("the direct links do not make %s:", what);
  for (int i = 0; i < n; i++)
    dcc_error("  no direct link between %s and %s", t->hosts[missing[i][0]].ssh,
              t->hosts[missing[i][1]].ssh);
  dcc_error("(%d link%s found; --dot draws them)", t->nlinks,
            t->nlinks == 1 ? "" : "s");
}

static int check_ring(const struct dcc_topo *t, int order[], int *rings) {
  int missing[DCC_MAX_HOSTS][2], n = 0;
  int rc = dcc_ring_find(t, order, rings, missing, &n);
  if (rc == -2)
    dcc_error("out of memory");
  if (rc == -1)
    report_missing(t, missing, n, "a ring through every host");
  if (rc != 0)
    return -1;
  fputs(DCC_PROG ": ring:", stderr);
  for (int r = 0; r <= t->nhosts; r++)
    fprintf(stderr, " %s%s", t->hosts[order[r % t->nhosts]].ssh,
            r < t->nhosts ? " ->" : "");
  if (*rings == 1)
    fputs(" (1 ring)\n", stderr);
  else
    fprintf(stderr, " (%d parallel rings)\n", *rings);
  return 0;
}

static int check_mesh(const struct dcc_topo *t) {
  int missing[DCC_MAX_HOSTS * DCC_MAX_HOSTS / 2][2];
  int n = dcc_mesh_missing(t, missing);
  if (n > 0) {
    report_missing(t, missing, n, "a full mesh");
    return -1;
  }
  fprintf(stderr, DCC_PROG ": mesh: every pair of the %d hosts is linked\n",
          t->nhosts);
  return 0;
}

/* Without --auto-setup: the commands for the user, then stop. */
static int print_setup(const struct dcc_topo *t, int planned) {
  dcc_error("%d direct link%s no IPv4 addresses; run these (or pass "
            "--auto-setup), then run " DCC_PROG " again:",
            planned, planned == 1 ? " has" : "s have");
  for (int h = 0; h < t->nhosts; h++) {
    char lines[8192];
    if (dcc_setup_lines(t, h, "  sudo ", lines, sizeof lines) > 0)
      printf("on %s:\n%s", t->hosts[h].ssh, lines);
  }
  fflush(stdout);
  return 1;
}

/* --auto-setup: the `ip addr add` lines on every host at once. */
static int auto_setup(const struct dcc_topo *t) {
  static const char head[] =
      "S=; [ \"$(id -u)\" = 0 ] || S='sudo -n'; set -e\n";
  struct dcc_job jobs[DCC_MAX_HOSTS];
  char *scripts = calloc((size_t)t->nhosts, 8192);
  if (scripts == NULL)
    return 1;
  for (int h = 0; h < t->nhosts; h++) {
    char *s = scripts + (size_t)h * 8192;
    strcpy(s, head);
    int n = dcc_setup_lines(t, h, "$S ", s + strlen(head), 8192 - strlen(head));
    jobs[h] = (struct dcc_job){.host = t->hosts[h].ssh, .script = n ? s : NULL};
  }
  int failed = dcc_ssh_all(jobs, t->nhosts, 30, "setting up addresses");
  for (int h = 0; h < t->nhosts; h++) {
    char why[1200];
    if (jobs[h].script && jobs[h].status != 0)
      dcc_error("setting up the addresses on %s failed (%s)", t->hosts[h].ssh,
                dcc_job_why(&jobs[h], why, sizeof why));
  }
  dcc_jobs_free(jobs, t->nhosts);
  free(scripts);
  return failed ? 1 : 0;
}

struct ring_args {
  const struct dcc_topo *t;
  const int *order;
  int rings;
};

static void emit_ring(FILE *f, const void *arg) {
  const struct ring_args *r = arg;
  dcc_emit_ring(f, r->t, r->order, r->rings);
}

static void emit_mesh(FILE *f, const void *t) { dcc_emit_mesh(f, t); }

int dcc_run_direct(const struct dcc_options *o, struct dcc_topo *t) {
  if (t->nhosts < 2) {
    dcc_error("--over direct needs at least 2 hosts (--hosts h1,h2,...)");
    return 2;
  }
  if (probe(t) != 0)
    return 1;
  log_links(t);
  int planned = dcc_plan_addresses(t, false);
  if (planned < 0) {
    dcc_error("no free 192.168.k.0/30 left for the direct links");
    return 1;
  }
  if (o->dot) {
    dcc_emit_dot(stdout, t);
    return 0;
  }
  int order[DCC_MAX_HOSTS], rings = 1;
  if (o->mesh ? check_mesh(t) : check_ring(t, order, &rings))
    return 1;
  if (planned > 0 && (o->auto_setup ? auto_setup(t) : print_setup(t, planned)))
    return 1;
  struct ring_args ra = {t, order, rings};
  return o->mesh ? dcc_write_hostfile(o, emit_mesh, t)
                 : dcc_write_hostfile(o, emit_ring, &ra);
}
