/* The launcher's side of remote ranks. Each host gets one ssh process that
 * runs our agent there (`distcomm-launch --remote-agent`) for all of the
 * host's ranks (link.c); the agent gets their setup on ssh's stdin
 * (wire.h), so nothing but that fixed command line shows in `ps` there. Before
 * anything starts, every host is probed once, all in parallel: reachable, agent
 * installed, command present, ports in use. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "remote.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "hostfile.h"
#include "job.h"
#include "signals.h"
#include "util.h"
#include "wire.h"

/* Ports we choose when --starting-port is not given: above the common
 * services, below Linux's ephemeral range (32768-60999). */
#define PORT_LOW 20000
#define PORT_SPAN 12000

/* A growing, NULL-terminated vector of owned strings. */
struct words {
  char **v;
  size_t n;
  bool oom;
};

static void words_add(struct words *w, const char *s) {
  char **v = w->oom ? NULL : realloc(w->v, (w->n + 2) * sizeof *v);
  char *copy = v ? strdup(s) : NULL;
  if (v != NULL)
    w->v = v;
  if (copy == NULL) {
    w->oom = true;
    return;
  }
  w->v[w->n++] = copy;
  w->v[w->n] = NULL;
}

static void words_free(struct words *w) {
  for (size_t i = 0; i < w->n; i++)
    free(w->v[i]);
  free(w->v);
  memset(w, 0, sizeof *w);
}

/* DISTCOMM_SSH split at spaces (like Open MPI's plm_rsh_agent), then our
 * options: a password prompt must fail, not wait; a dead host must be seen. */
static void ssh_words(struct words *w) {
  const char *env = getenv("DISTCOMM_SSH");
  char *copy = strdup(env && *env ? env : "ssh"), *save = NULL;
  for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t;
       t = strtok_r(NULL, " \t", &save))
    words_add(w, t);
  free(copy);
  static const char *const ours[] = {
      "-o", "BatchMode=yes",         "-o", "ConnectTimeout=5",
      "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"};
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
    words_add(w, ours[i]);
}

/* s in single quotes for a POSIX shell; the caller frees. */
static char *quote(const char *s) {
  size_t n = 3;
  for (const char *c = s; *c; c++)
    n += *c == '\'' ? 4 : 1;
  char *q = malloc(n), *o = q;
  if (q == NULL)
    return NULL;
  *o++ = '\'';
  for (const char *c = s; *c; c++)
    o = *c == '\'' ? stpcpy(o, "'\\''") : (*o = *c, o + 1);
  *o++ = '\'';
  *o = '\0';
  return q;
}

/* ---- probing the hosts ------------------------------------------------ */

struct host_probe {
  const char *ssh;
  FILE *pipe;
  bool reached; /* the probe script ran to its end */
  bool has_cmd;
  char agent[1024];        /* the agent's path there, "" when none */
  char said[512];          /* what ssh said when it failed */
  uint8_t used[65536 / 8]; /* ports in use there */
};

static char *probe_script(const char *self, const char *cwd, const char *cmd) {
  char *qs = quote(self), *qd = quote(cwd), *qc = quote(cmd), *s = NULL;
  if (qs && qd && qc &&
      asprintf(
          &s,
          "a=%s; [ -x \"$a\" ] || a=$(command -v distcomm-launch 2>/dev/null) "
          "|| a=; "
          "echo \"dcl-probe agent $a\"; cd %s 2>/dev/null; "
          "if command -v %s >/dev/null 2>&1; then echo dcl-probe cmd 1; "
          "else echo dcl-probe cmd 0; fi; echo dcl-probe ports; "
          "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; echo dcl-probe end",
          qs, qd, qc) < 0)
    s = NULL;
  free(qs);
  free(qd);
  free(qc);
  return s;
}

static int probe_start(struct host_probe *h, const char *script) {
  struct words w = {0};
  ssh_words(&w);
  words_add(&w, "--"); /* the host is never an option */
  words_add(&w, h->ssh);
  words_add(&w, script);
  char *line = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&line, &len);
  for (size_t i = 0; m != NULL && !w.oom && i < w.n; i++) {
    char *q = quote(w.v[i]);
    fprintf(m, "%s ", q ? q : "''");
    free(q);
  }
  if (m != NULL)
    fputs("</dev/null 2>&1", m);
  if (m == NULL || fclose(m) != 0 || w.oom) {
    words_free(&w);
    free(line);
    return -1;
  }
  words_free(&w);
  dcl_info("checking host %s over ssh", h->ssh);
  h->pipe = popen(line, "r");
  free(line);
  return h->pipe == NULL ? -1 : 0;
}

/* A /proc/net/tcp line: "  N: ADDR:PORT ADDR:PORT ..." (hex). */
static void note_port(struct host_probe *h, const char *line) {
  const char *p = strchr(line, ':');
  if (p == NULL || (p = strchr(p + 1, ':')) == NULL)
    return;
  const char *sp = strchr(p, ' ');
  if (sp == NULL || strchr(p + 1, ':') == NULL)
    return;
  unsigned long port = strtoul(p + 1, NULL, 16);
  if (port < 65536)
    h->used[port / 8] |= (uint8_t)(1u << (port % 8));
}

static void probe_finish(struct host_probe *h) {
  char line[4096];
  bool in_ports = false;
  size_t said = 0;
  while (fgets(line, sizeof line, h->pipe) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "dcl-probe ", 10) == 0) {
      const char *what = line + 10;
      in_ports = strcmp(what, "ports") == 0;
      h->reached |= strcmp(what, "end") == 0;
      h->has_cmd |= strcmp(what, "cmd 1") == 0;
      if (strncmp(what, "agent ", 6) == 0)
        snprintf(h->agent, sizeof h->agent, "%.1000s", what + 6);
    } else if (in_ports) {
      note_port(h, line);
    } else if (said < sizeof h->said - 1 && line[0] != '\0') {
      said += (size_t)snprintf(h->said + said, sizeof h->said - said, "%s%s",
                               said ? "; " : "", line);
    }
  }
  int st = pclose(h->pipe);
  h->pipe = NULL;
  if (!h->reached && h->said[0] == '\0')
    snprintf(h->said, sizeof h->said, "ssh ended with status %d", st);
}

/* What the probes found wrong, host by host; returns the exit status or 0. */
static int judge(struct host_probe *hs, size_t n, const struct dcl_options *o,
                 const char *cmd, const char *cwd) {
  int rc = 0;
  for (size_t i = 0; i < n; i++)
    if (!hs[i].reached) {
      dcl_error("cannot reach host %s over ssh: %s", hs[i].ssh, hs[i].said);
      rc = 255;
    }
  for (size_t i = 0; rc == 0 && i < n; i++)
    if (hs[i].agent[0] == '\0') {
      dcl_error(
          "host %s: distcomm-launch is not installed there (looked for the "
          "path of this one and on the PATH of ssh sessions)",
          hs[i].ssh);
      rc = 127;
    }
  for (size_t i = 0; rc != 255 && !o->no_verify && i < n; i++)
    if (!hs[i].has_cmd) {
      dcl_error(
          "host %s: command '%s' not found (in %s); --no-verify-script skips "
          "this check",
          hs[i].ssh, cmd, cwd);
      rc = rc ? rc : 127;
    }
  if (rc != 0)
    dcl_error("nothing was started");
  return rc;
}

/* ---- ports and the hostfile ------------------------------------------- */

static struct host_probe *probe_of(struct host_probe *hs, size_t n,
                                   const char *ssh) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(hs[i].ssh, ssh) == 0)
      return &hs[i];
  return NULL;
}

/* MLX's numbering: one counter across ranks, addresses and connections;
 * from --starting-port exactly, or from a random base skipping the ports
 * that the probe saw in use on the rank's host. *master: the next port
 * free on rank 0's host, torchrun's MASTER_PORT. */
static char *ring_json(const struct dcl_plan *p, const struct dcl_options *o,
                       struct host_probe *hs, size_t n, long *master) {
  uint16_t rnd = 0;
  long port = o->starting_port;
  if (port == 0 && dcl_random(&rnd, sizeof rnd) == 0)
    port = PORT_LOW + rnd % PORT_SPAN;
  char *json = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&json, &len);
  if (m == NULL)
    return NULL;
  fputc('[', m);
  for (long r = 0; r < p->nranks; r++) {
    const struct dcl_host *h = &p->ranks[r];
    struct host_probe *hp = probe_of(hs, n, h->ssh);
    fputs(r ? ",[" : "[", m);
    for (size_t i = 0; i < h->n_ips; i++)
      for (long k = 0; k < o->conns_per_ip; k++, port++) {
        while (o->starting_port == 0 && port < 65535 &&
               (hp->used[port / 8] >> (port % 8) & 1))
          port++;
        bool v6 = strchr(h->ips[i], ':') != NULL;
        fprintf(m, "%s\"%s%s%s:%ld\"", i || k ? "," : "", v6 ? "[" : "",
                h->ips[i], v6 ? "]" : "", port);
      }
    fputc(']', m);
  }
  fputs("]\n", m);
  struct host_probe *h0 = probe_of(hs, n, p->ranks[0].ssh);
  while (port < 65535 && (h0->used[port / 8] >> (port % 8) & 1))
    port++;
  *master = port++;
  if (fclose(m) != 0 || port > 65536) {
    dcl_error("not enough ports above %ld for %ld ranks", o->starting_port,
              p->nranks);
    free(json);
    return NULL;
  }
  return json;
}

/* ---- the launch -------------------------------------------------------- */

static size_t unique_hosts(const struct dcl_plan *p, struct host_probe **out) {
  struct host_probe *hs = calloc((size_t)p->nranks, sizeof *hs);
  size_t n = 0;
  for (long r = 0; hs != NULL && r < p->nranks; r++)
    if (probe_of(hs, n, p->ranks[r].ssh) == NULL)
      hs[n++].ssh = p->ranks[r].ssh;
  *out = hs;
  return hs ? n : 0;
}

static int probe_all(struct host_probe *hs, size_t n,
                     const struct dcl_options *o, const char *cmd,
                     const char *cwd) {
  char self[1024];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  self[len > 0 ? len : 0] = '\0';
  char *script = probe_script(self, cwd, cmd);
  int rc = script ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < n;
       i++) /* all at once: slow hosts overlap */
    rc = probe_start(&hs[i], script);
  bool tty = isatty(STDERR_FILENO); /* progress only for a person watching */
  for (size_t i = 0; i < n; i++) {
    if (hs[i].pipe == NULL)
      continue;
    probe_finish(&hs[i]);
    if (tty)
      fprintf(stderr, DCL_PROG ": checking hosts: %s %s (%zu/%zu)\n", hs[i].ssh,
              hs[i].reached ? "reached" : "unreachable", i + 1, n);
  }
  free(script);
  if (rc != 0) {
    dcl_error("cannot run ssh: %s", strerror(errno));
    return 1;
  }
  int count, sig = dcl_signals_drain(&count); /* Ctrl-C also ended the probes */
  if (sig != 0) {
    const char *name = sigabbrev_np(sig);
    dcl_error("received SIG%s; nothing was started", name ? name : "?");
    return 128 + sig;
  }
  return judge(hs, n, o, cmd, cwd);
}

/* One link per host: ssh HOST 'AGENT' --remote-agent, for all its ranks. */
static int make_argvs(struct dcl_job *j, const struct dcl_plan *p,
                      struct host_probe *hs, size_t n, struct words *argvs) {
  for (long r = 0; r < p->nranks; r++) {
    j->link_of[r] = (int)(probe_of(hs, n, p->ranks[r].ssh) - hs);
    j->ranks[r].host = p->ranks[r].ssh;
  }
  for (size_t l = 0; l < n; l++) {
    char *qa = quote(hs[l].agent), *cmd = NULL;
    if (qa == NULL || asprintf(&cmd, "%s --remote-agent", qa) < 0)
      cmd = NULL;
    free(qa);
    ssh_words(&argvs[l]);
    words_add(&argvs[l], "--"); /* the host is never an option */
    words_add(&argvs[l], hs[l].ssh);
    words_add(&argvs[l], cmd ? cmd : "");
    bool ok = cmd != NULL && !argvs[l].oom;
    free(cmd);
    if (!ok)
      return -1;
    j->links[l].host = hs[l].ssh;
    j->links[l].ssh_argv = argvs[l].v;
    for (long r = p->nranks - 1; r >= 0;
         r--) /* its messages name its first rank */
      if (j->link_of[r] == (int)l)
        j->links[l].index = (int)r;
  }
  return 0;
}

/* DISTCOMM_HEARTBEAT_MS: how often the agents hear from us (tests set it low).
 */
static int heartbeat_ms(long *ms) {
  const char *s = getenv("DISTCOMM_HEARTBEAT_MS");
  *ms = DCL_BEAT_MS_DEFAULT;
  if (s == NULL || *s == '\0' || dcl_parse_long(s, 10, 600000, ms) == 0)
    return 0;
  dcl_error("DISTCOMM_HEARTBEAT_MS='%s': not a number of milliseconds from 10 "
            "to 600000",
            s);
  return -1;
}

static int run_job(const struct dcl_options *o, const struct dcl_plan *p,
                   char **argv, struct host_probe *hs, size_t n,
                   const char *json, const char *cwd, long master) {
  char job_id[17], token[33], master_port[24];
  snprintf(master_port, sizeof master_port, "%ld", master);
  struct dcl_job job;
  struct words *argvs = calloc(n, sizeof *argvs);
  struct dcl_launch_env e = {.opts = o,
                             .argv = argv,
                             .hostfile_json = json,
                             .cwd = cwd,
                             .launcher_pid = getpid(),
                             .job_id = job_id,
                             .job_token = token,
                             .master_addr =
                                 p->ranks[0].n_ips ? p->ranks[0].ips[0] : NULL,
                             .master_port = master_port};
  int rc = argvs == NULL ||
           dcl_job_init(&job, (int)p->nranks, o->tag_output) != 0 ||
           dcl_job_add_links(&job, (int)n) != 0;
  job.keep_going = o->keep_going;
  if (rc == 0 && make_argvs(&job, p, hs, n, argvs) != 0)
    rc = 1;
  if (rc != 0)
    dcl_error("out of memory");
  if (rc == 0 && heartbeat_ms(&job.beat_ms) != 0)
    rc = 2;
  if (rc == 0 && (dcl_random_hex(job_id, sizeof job_id, 8) != 0 ||
                  dcl_random_hex(token, sizeof token, 16) != 0))
    rc = 1;
  if (rc == 0) {
    dcl_info("hostfile: %.*s", (int)strcspn(json, "\n"), json);
    rc = dcl_job_start(&job, &e);
    int run_rc = dcl_job_run(&job);
    rc = rc != 0 ? rc : run_rc;
  }
  if (argvs != NULL && job.ranks != NULL)
    dcl_job_free(&job);
  for (size_t l = 0; argvs != NULL && l < n; l++)
    words_free(&argvs[l]);
  free(argvs);
  return rc;
}

int dcl_remote_launch(const struct dcl_options *o, const struct dcl_plan *p,
                      char **argv) {
  char cwd[4096];
  if (o->cwd != NULL)
    snprintf(cwd, sizeof cwd, "%s", o->cwd);
  else if (getcwd(cwd, sizeof cwd) == NULL)
    snprintf(cwd, sizeof cwd, "/");
  struct host_probe *hs;
  size_t n = unique_hosts(p, &hs);
  if (hs == NULL) {
    dcl_error("out of memory");
    return 1;
  }
  int rc = probe_all(hs, n, o, argv[0], cwd);
  long master = 0;
  char *json = rc == 0 ? ring_json(p, o, hs, n, &master) : NULL;
  if (rc == 0 && json == NULL)
    rc = 1;
  if (rc == 0)
    rc = run_job(o, p, argv, hs, n, json, cwd, master);
  free(json);
  free(hs);
  return rc;
}
