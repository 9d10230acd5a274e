/* --backend mpi: like mlx.launch, a thin wrapper over mpirun. We write the
 * hosts as an MPI hostfile, pass --env with mpirun's own flag, add the
 * --mpi-arg words, and let mpirun start, watch and stop the ranks; the
 * library then finds MPI's variables in each rank (backend "mpi"). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpi_launch.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hosts.h"
#include "signals.h"
#include "util.h"

/* The two launchers' dialects: Open MPI's mpirun (orterun/prterun) and
 * MPICH's hydra (mpiexec.hydra) differ in hostfile syntax and flags. */
struct dialect {
  const char *name;
  const char *slots;    /* between host and slot count in a hostfile line */
  const char *hostfile; /* flag before the hostfile */
  const char *cwd;      /* flag before the working directory */
  const char *tag;      /* flag that prefixes lines with the rank */
  bool env_pair;        /* -genv K V (hydra) instead of -x K=V */
};
static const struct dialect OMPI = {"Open MPI", " slots=",      "--hostfile",
                                    "--wdir",   "--tag-output", false};
static const struct dialect HYDRA = {"MPICH hydra",   ":", "-f", "-wdir",
                                     "-prepend-rank", true};

/* A growing argv for mpirun; every string is owned (freed with it). */
struct args {
  char **v;
  size_t n, cap;
  bool oom;
  const struct dialect *d; /* the launcher's dialect, set by build() */
};

static void add(struct args *a, const char *s) {
  if (a->oom)
    return;
  if (a->n + 2 > a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 32;
    char **v = realloc(a->v, cap * sizeof *v);
    if (v == NULL) {
      a->oom = true;
      return;
    }
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n] = strdup(s);
  a->oom = a->v[a->n] == NULL;
  a->n += !a->oom;
  a->v[a->n] = NULL;
}

static void args_free(struct args *a) {
  for (size_t i = 0; i < a->n; i++)
    free(a->v[i]);
  free(a->v);
}

static const char *mpirun_name(void) {
  const char *s = getenv("DISTCOMM_MPIRUN");
  return s && *s ? s : "mpirun";
}

/* `mpirun --version` names the launcher; Open MPI's syntax is the default
 * (seed 000 and mlx.launch speak it). */
static const struct dialect *detect(const char *mpirun) {
  char cmd[1024], line[256];
  if (strchr(mpirun, '\'') != NULL)
    return &OMPI;
  snprintf(cmd, sizeof cmd, "'%s' --version 2>&1", mpirun);
  FILE *p = popen(cmd, "r");
  const struct dialect *d = &OMPI;
  while (p != NULL && fgets(line, sizeof line, p) != NULL)
    if (strstr(line, "HYDRA") != NULL)
      d = &HYDRA;
  if (p != NULL)
    pclose(p);
  return d;
}

/* ---- hosts ------------------------------------------------------------ */

static char g_hostfile[4096];

static void remove_hostfile(void) {
  if (g_hostfile[0] != '\0')
    unlink(g_hostfile);
  g_hostfile[0] = '\0';
}

/* An MPI hostfile already: passed as it is; its slots give the rank count. */
static long mpi_file_slots(const char *text) {
  long total = 0;
  for (const char *l = text; *l != '\0';
       l += strcspn(l, "\n"), l += *l == '\n') {
    l += strspn(l, " \t");
    if (*l == '#' || *l == '\n' || *l == '\0')
      continue;
    const char *eol = l + strcspn(l, "\n"), *s = strstr(l, "slots=");
    const char *colon = memchr(l, ':', (size_t)(eol - l));
    long k = s != NULL && s < eol ? atol(s + 6) : colon ? atol(colon + 1) : 1;
    total += k > 0 ? k : 0;
  }
  return total;
}

static int write_hostfile(const struct dialect *d, const struct dcl_plan *p,
                          long per) {
  const char *dir = getenv("TMPDIR");
  snprintf(g_hostfile, sizeof g_hostfile, "%s/distcomm-mpi-hosts-XXXXXX",
           dir && dir[0] == '/' ? dir : "/tmp");
  int fd = mkstemp(g_hostfile);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) {
    dcl_error("cannot write the MPI hostfile %s: %s", g_hostfile,
              strerror(errno));
    g_hostfile[0] = '\0';
    return -1;
  }
  atexit(remove_hostfile);
  for (long i = 0; i < p->nranks; i++)
    fprintf(f, "%s%s%ld\n", p->ranks[i].ssh, d->slots, per);
  return fclose(f) == 0 ? 0 : -1;
}

/* Adds the hostfile and -np to a. Returns -1 after printing why. */
static int add_hosts(const struct dcl_options *o, const struct dialect *d,
                     struct args *a) {
  char *text = NULL, np[32];
  long total = o->nranks;
  int rc = 0;
  if (o->hostfile != NULL && (text = dcl_read_hostfile(o->hostfile)) == NULL)
    return -1;
  const char *first = text ? text + strspn(text, " \t\r\n") : "";
  bool json = *first == '[' || *first == '{';
  if (text != NULL && !json) {
    total = mpi_file_slots(text);
    add(a, d->hostfile);
    add(a, o->hostfile);
  } else if (text != NULL || o->hosts != NULL) {
    struct dcl_plan plan; /* the launcher's own parser: one set of rules */
    rc = dcl_plan_hosts(o, text, &plan);
    rc = rc == 0 ? write_hostfile(d, &plan, o->nranks) : -1;
    total = o->nranks * plan.nranks;
    dcl_plan_free(&plan);
    add(a, d->hostfile);
    add(a, g_hostfile);
  }
  snprintf(np, sizeof np, "%ld", total);
  add(a, "-np");
  add(a, np);
  free(text);
  return rc;
}

/* ---- the command ------------------------------------------------------- */

static void add_env(const struct dialect *d, struct args *a, const char *kv) {
  if (!d->env_pair) {
    add(a, "-x");
    add(a, kv);
    return;
  }
  const char *eq = strchr(kv, '=');
  char *k = strndup(kv, (size_t)(eq - kv));
  add(a, "-genv");
  add(a, k ? k : "");
  add(a, eq + 1);
  free(k);
}

/* --mpi-arg '--mca btl_tcp_if_include eth0' is three words for mpirun. */
static void add_words(struct args *a, const char *s) {
  char *copy = strdup(s), *save = NULL;
  for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t != NULL;
       t = strtok_r(NULL, " \t", &save))
    add(a, t);
  free(copy);
}

static int build(const struct dcl_options *o, char **command, struct args *a) {
  const char *mpirun = mpirun_name();
  const struct dialect *d = detect(mpirun);
  a->d = d;
  add(a, mpirun);
  if (add_hosts(o, d, a) != 0)
    return -1;
  int chosen = 0;
  for (size_t i = 0; i < o->n_envs; i++) {
    add_env(d, a, o->envs[i]);
    chosen |= strncmp(o->envs[i], "DISTCOMM_BACKEND=", 17) == 0;
  }
  /* Under mpirun's PMIx server "any" would start distcomm's own transport:
   * --backend mpi means MPI's (unless --env names another). */
  if (!chosen)
    add_env(d, a, "DISTCOMM_BACKEND=mpi");
  if (o->verbose)
    add_env(d, a, "MLX_RING_VERBOSE=1");
  if (o->cwd != NULL) {
    add(a, d->cwd);
    add(a, o->cwd);
  }
  if (o->tag_output)
    add(a, d->tag);
  for (size_t i = 0; i < o->n_mpi_args; i++)
    add_words(a, o->mpi_args[i]);
  for (char **c = command; *c != NULL; c++)
    add(a, *c);
  if (a->oom)
    dcl_error("out of memory");
  if (dcl_verbose && !a->oom) {
    char line[4096] = "";
    size_t used = 0;
    for (size_t i = 0; i < a->n && used < sizeof line - 1; i++)
      used += (size_t)snprintf(line + used, sizeof line - used, "%s%s",
                               i ? " " : "", a->v[i]);
    dcl_info("%s: running: %s", d->name, line);
  }
  return a->oom ? -1 : 0;
}

/* ---- running it --------------------------------------------------------- */

static int exit_status(int st) {
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Signals we get (Ctrl-C, SIGTERM, SIGHUP) go on to mpirun, which stops the
 * ranks; we wait for it, then remove the hostfile. */
static int supervise(pid_t pid) {
  for (;;) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid)
      return exit_status(st);
    if (w < 0 && errno != EINTR)
      return 1;
    struct pollfd p = {dcl_signals_fd(), POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      int count = 0, sig = dcl_signals_drain(&count);
      if (sig != 0)
        kill(pid, sig);
    }
  }
}

/* Open MPI's mpirun refuses root unless told otherwise; when that must have
 * been why it failed, say how to allow it (the launcher does not). */
static void root_hint(const struct args *a, int rc) {
  if (rc == 0 || rc == 127 || rc >= 128 || geteuid() != 0 || a->d != &OMPI)
    return;
  if (getenv("OMPI_ALLOW_RUN_AS_ROOT") != NULL &&
      getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") != NULL)
    return;
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->v[i], "--allow-run-as-root") == 0)
      return;
  dcl_error("mpirun exited with status %d; as root, Open MPI's mpirun "
            "refuses to start: add --mpi-arg --allow-run-as-root, or set "
            "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
            rc);
}

int dcl_mpi_launch(const struct dcl_options *o, char **command) {
  struct args a = {0};
  if (o->keep_going) {
    dcl_error("--keep-going needs ranks started by distcomm-launch itself: "
              "mpirun (--backend mpi) ends the whole job when one rank "
              "fails");
    return 2;
  }
  int rc = build(o, command, &a);
  if (rc == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      dcl_signals_reset_in_child();
      execvp(a.v[0], a.v);
      dcl_error("cannot run %s: %s (install Open MPI or MPICH, or set "
                "DISTCOMM_MPIRUN)",
                a.v[0], strerror(errno));
      _exit(127);
    }
    rc = pid < 0 ? 1 : supervise(pid);
    if (pid < 0)
      dcl_error("fork: %s", strerror(errno));
    else
      root_hint(&a, rc);
  } else {
    rc = 2;
  }
  remove_hostfile();
  args_free(&a);
  return rc;
}
