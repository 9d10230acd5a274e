/* distcomm-launch: starts the ranks of a distributed program with the ring
 * backend's configuration, the C counterpart of `mlx.launch`: N local ranks
 * (-n N), or ranks on other hosts over ssh (--hosts, --hostfile; remote.c). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostfile.h"
#include "hosts.h"
#include "job.h"
#include "mpi_launch.h"
#include "options.h"
#include "ports.h"
#include "remote.h"
#include "signals.h"
#include "spawn.h"
#include "util.h"

/* Our pipes must never land on fds 0-2: a rank would get the wrong stdio. */
static void ensure_std_fds(void) {
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0) {
      int nul = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (nul >= 0 && nul != fd)
        close(nul); /* cannot happen: open takes the lowest free fd */
    }
}

/* Each rank costs us three fds; large -n must not die on the soft limit. */
static void raise_fd_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* mlx.launch runs a script file with python; do the same for a .py file that
 * cannot be executed itself. Returns argv, or a new vector owned by the caller.
 */
static char **resolve_command(const char *python, char **argv, char ***owned) {
  const char *cmd = argv[0];
  size_t len = strlen(cmd);
  struct stat st;
  *owned = NULL;
  if (len < 3 || strcmp(cmd + len - 3, ".py") != 0 || access(cmd, X_OK) == 0 ||
      stat(cmd, &st) != 0 || !S_ISREG(st.st_mode))
    return argv;
  size_t n = 0;
  while (argv[n] != NULL)
    n++;
  char **v = calloc(n + 2, sizeof *v);
  if (v == NULL)
    return argv;
  v[0] = (char *)python;
  memcpy(v + 1, argv, (n + 1) * sizeof *v);
  *owned = v;
  return v;
}

/* --print-python: the python a .py command runs with, as a path (found on
 * PATH like execvp would), as mlx.launch prints sys.executable. */
static int print_python(const char *python) {
  if (strchr(python, '/') != NULL) {
    printf("%s\n", python);
    return 0;
  }
  const char *path = getenv("PATH");
  char *dirs = strdup(path != NULL ? path : "/usr/bin:/bin");
  for (char *save, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d;
       d = strtok_r(NULL, ":", &save)) {
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", d, python) < (int)sizeof full &&
        access(full, X_OK) == 0) {
      printf("%s\n", full);
      free(dirs);
      return 0;
    }
  }
  free(dirs);
  dcl_error("--print-python: %s is not on PATH", python);
  return 1;
}

static void log_plan(const struct dcl_launch_env *e) {
  if (!dcl_verbose)
    return;
  FILE *f = fopen(e->hostfile, "r");
  char json[4096] = "";
  if (f != NULL) {
    size_t n = fread(json, 1, sizeof json - 1, f);
    json[n] = '\0';
    json[strcspn(json, "\n")] = '\0';
    fclose(f);
  }
  dcl_info("hostfile %s: %s", e->hostfile, json);
  dcl_info("job id %s, %ld ranks, backend %s", e->job_id, e->opts->nranks,
           e->opts->backend);
  char cmd[2048] = "";
  size_t used = 0;
  for (char **a = e->argv; *a != NULL && used < sizeof cmd - 1; a++) {
    const char *sep = a == e->argv ? "" : " ";
    used += (size_t)snprintf(cmd + used, sizeof cmd - used, "%s%s", sep, *a);
  }
  dcl_info("running: %s", cmd);
}

/* Everything between parsing and running: ports, hostfile, ids. */
static int prepare(const struct dcl_options *o, struct dcl_ports *ports,
                   struct dcl_launch_env *e, char *job_id, char *token) {
  size_t count = (size_t)(o->nranks * o->conns_per_ip);
  if (dcl_reserve_ports(o->starting_port, count, ports) != 0)
    return 1;
  e->hostfile = dcl_write_hostfile(ports, o->nranks, o->conns_per_ip);
  if (e->hostfile == NULL)
    return 1;
  if (dcl_random_hex(job_id, 17, 8) != 0 || dcl_random_hex(token, 33, 16) != 0)
    return 1;
  e->job_id = job_id;
  e->job_token = token;
  e->launcher_pid = getpid();
  return 0;
}

static int launch_here(const struct dcl_options *o);

/* The mesh's device matrix, then the hostfile's "envs", then --env: the
 * user's own word wins. */
static int merge_envs(struct dcl_options *o, const struct dcl_plan *p) {
  size_t m = p->n_mesh_envs, n = m + p->n_envs;
  const char **envs = calloc(n + o->n_envs + 1, sizeof *envs);
  if (envs == NULL)
    return -1;
  for (size_t i = 0; i < m; i++)
    envs[i] = p->mesh_envs[i];
  if (p->n_envs > 0)
    memcpy(envs + m, p->envs, p->n_envs * sizeof *envs);
  if (o->n_envs > 0)
    memcpy(envs + n, o->envs, o->n_envs * sizeof *envs);
  free(o->envs);
  o->envs = envs;
  o->n_envs += n;
  return 0;
}

/* --hosts / --hostfile: remote ranks over ssh, or local ones when every
 * host is this machine's loopback name. */
static int launch_hosts(struct dcl_options *o) {
  struct dcl_plan plan;
  if (dcl_plan_build(o, &plan) != 0) {
    dcl_plan_free(&plan);
    return 2;
  }
  int rc = 0;
  if (!o->backend_set && plan.backend != NULL &&
      dcl_backend_is_mesh(plan.backend)) {
    o->backend =
        strcmp(plan.backend, "jaccl-ring") == 0 ? "jaccl-ring" : "mesh";
  } else if (!o->backend_set && plan.backend != NULL &&
             strcmp(plan.backend, "ring") != 0) {
    if (strcmp(plan.backend, "mpi") != 0) {
      const char *missing = dcl_backend_missing(plan.backend);
      dcl_error("--hostfile %s: backend \"%s\": %s; give --backend ring or mpi",
                o->hostfile, plan.backend,
                missing ? missing : "unknown (expected ring or mpi)");
      rc = 2;
    }
    o->backend = "mpi";
    if (o->mlx) {
      dcl_error("--hostfile %s: backend \"mpi\" runs mpirun (MLX on Open "
                "MPI), --mlx runs MLX on distcomm's ranks: give one of them",
                o->hostfile);
      rc = 2;
    }
  }
  if (rc == 0 && dcl_backend_is_mesh(o->backend) &&
      dcl_plan_mesh(o, &plan) != 0)
    rc = 2;
  if (rc == 0 && merge_envs(o, &plan) != 0) {
    dcl_error("out of memory");
    rc = 1;
  }
  if (strcmp(o->backend, "mpi") != 0)
    o->nranks = plan.nranks; /* mpirun gets -n per host */
  if (rc == 0 && (plan.all_local || strcmp(o->backend, "mpi") == 0)) {
    if (strcmp(o->backend, "mpi") != 0)
      o->hosts = o->hostfile = NULL;
    rc = launch_here(o);
  } else if (rc == 0) {
    char **owned;
    char **argv = resolve_command(o->python, o->command, &owned);
    rc = dcl_remote_launch(o, &plan, argv);
    free(owned);
  }
  dcl_plan_free(&plan);
  return rc;
}

static int launch(struct dcl_options *o) {
  bool hosts = o->hosts != NULL || o->hostfile != NULL;
  if (hosts &&
      strcmp(o->backend, "mpi") != 0) /* --backend mpi: mpirun's hosts */
    return launch_hosts(o);
  if (!dcl_backend_is_mesh(o->backend))
    return launch_here(o);
  struct dcl_plan none = {0}; /* -n N here: the mesh over the loopback */
  int rc = dcl_plan_mesh(o, &none) != 0 ? 2 : merge_envs(o, &none) != 0 ? 1 : 0;
  rc = rc ? rc : launch_here(o);
  dcl_plan_free(&none);
  return rc;
}

static int launch_here(const struct dcl_options *o) {
  struct dcl_ports ports = {0};
  struct dcl_job job;
  char job_id[17], token[33];
  char **owned;
  struct dcl_launch_env e = {
      .opts = o, .argv = resolve_command(o->python, o->command, &owned)};
  if (strcmp(o->backend, "mpi") == 0) { /* mpirun starts the ranks */
    int mpi_rc = dcl_mpi_launch(o, e.argv);
    free(owned);
    return mpi_rc;
  }
  int rc = prepare(o, &ports, &e, job_id, token);
  /* MASTER_PORT for torch's env:// store (the library keeps the hostfile) */
  struct dcl_ports master = {0};
  char master_port[8];
  if (rc == 0 && (rc = dcl_reserve_ports(0, 1, &master) != 0 ? 1 : 0) == 0) {
    snprintf(master_port, sizeof master_port, "%d", master.ports[0]);
    e.master_port = master_port;
  }
  if (rc == 0 && dcl_job_init(&job, (int)o->nranks, o->tag_output) != 0) {
    dcl_error("out of memory");
    rc = 1;
  } else if (rc == 0) {
    job.keep_going = o->keep_going;
    log_plan(&e);
    dcl_share_ports(&ports); /* the ranks bind them; other launchers cannot */
    dcl_share_ports(&master);
    rc = dcl_job_start(&job, &e);
    int run_rc = dcl_job_run(&job); /* after a failed start: stops the rest */
    rc = rc != 0 ? rc : run_rc;
    dcl_job_free(&job);
  }
  dcl_remove_hostfile();
  dcl_ports_free(&ports);
  dcl_ports_free(&master);
  free(owned);
  return rc;
}

int main(int argc, char **argv) {
  ensure_std_fds();
  if (argc == 2 && strcmp(argv[1], "--remote-agent") == 0)
    return dcl_agent_main(); /* on a remote host, for the launcher there */
  struct dcl_options opts;
  enum dcl_parse_result pr = dcl_parse_options(argc, argv, &opts);
  if (pr == DCL_PARSE_PRINT_PYTHON) {
    int prc = print_python(opts.python);
    dcl_options_free(&opts);
    return prc;
  }
  if (pr != DCL_PARSE_RUN) {
    dcl_options_free(&opts);
    return pr == DCL_PARSE_HELP ? 0 : 2;
  }
  static char face[4096];
  if (opts.mlx && dcl_mlx_face(face, sizeof face) != 0) {
    dcl_error("--mlx: libdistcomm-ompi.so (MLX's MPI face) is not beside "
              "this launcher (looked in ../ and ../" DCL_FACE_LIBDIR
              "/ from its folder): build or install distcomm whole");
    dcl_options_free(&opts);
    return 2;
  }
  opts.mlx_face = opts.mlx ? face : NULL;
  raise_fd_limit();
  if (dcl_signals_install() != 0) {
    dcl_error("cannot install signal handlers");
    return 1;
  }
  int rc = launch(&opts);
  dcl_options_free(&opts);
  return rc;
}
