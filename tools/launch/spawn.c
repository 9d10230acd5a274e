#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np, CPU_SET */
#endif
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forward.h"
#include "signals.h"
#include "util.h"

/* The child reports a failure before exec through a close-on-exec pipe:
 * EOF means exec succeeded, a report means it did not. */
enum stage { STAGE_SETUP = 1, STAGE_CHDIR, STAGE_EXEC };
struct report {
  int stage;
  int err;
};

static void child_fail(int fd, enum stage stage) {
  struct report rep = {stage, errno};
  ssize_t ignored = write(fd, &rep, sizeof rep);
  (void)ignored;
  _exit(127); /* _exit: no atexit handlers (they would remove the hostfile) */
}

/* The rank's environment, built before the vfork (the child shares our
 * memory and may not allocate): ours, under --env, under the launcher's own
 * variables, which win, as with mlx.launch. A later --env of a name wins
 * over an earlier one, as putenv did. */
struct rank_env {
  char **v;      /* NULL-terminated, for execvpe */
  char *own[14]; /* the launcher's own "K=V" strings (freed with v) */
};

static bool named(const char *kv, char *const *list, size_t n) {
  size_t len = strcspn(kv, "=");
  for (size_t i = 0; i < n; i++)
    if (strncmp(list[i], kv, len) == 0 && list[i][len] == '=')
      return true;
  return false;
}

/* "K=V" in fresh memory, NULL when out of it. */
static char *kv(const char *k, const char *v) {
  size_t n = strlen(k) + strlen(v) + 2;
  char *s = malloc(n);
  if (s != NULL)
    snprintf(s, n, "%s=%s", k, v);
  return s;
}

/* --mlx: MLX's ring variables inherited from our environment would make
 * MLX take its own ring instead of the face; they stay out. */
static bool mlx_ring_var(const char *kv) {
  return strncmp(kv, "MLX_RANK=", 9) == 0 ||
         strncmp(kv, "MLX_HOSTFILE=", 13) == 0;
}

/* False when out of memory (free it all the same). */
static bool rank_env_build(struct rank_env *re, const struct dcl_launch_env *e,
                           const struct dcl_rank *r) {
  const struct dcl_options *o = e->opts;
  size_t n_env = 0, n = 0, k = 0;
  char num[4][32];
  while (environ[n_env] != NULL)
    n_env++;
  *re = (struct rank_env){0};
  size_t cap = sizeof re->own / sizeof re->own[0] + o->n_envs + n_env + 1;
  re->v = malloc(cap * sizeof *re->v);
  snprintf(num[0], sizeof num[0], "%d", r->index);
  snprintf(num[1], sizeof num[1], "%ld", o->nranks);
  snprintf(num[2], sizeof num[2], "%d", r->local);
  snprintf(num[3], sizeof num[3], "%ld",
           e->local_size > 0 ? (long)e->local_size : o->nranks);
  /* --mlx: names MLX's ring does not read, so MLX takes its mpi backend,
   * which loads our face; the library reads either name. */
  bool mlx = o->mlx;
  char face[4096] = "libdistcomm-ompi.so";
  if (mlx && o->mlx_face != NULL)
    snprintf(face, sizeof face, "%s", o->mlx_face);
  else if (mlx) /* the agent: beside its own binary */
    (void)dcl_mlx_face(face, sizeof face);
  bool ok = re->v != NULL &&
            (re->own[k++] = kv(mlx ? "DISTCOMM_RANK" : "MLX_RANK", num[0])) &&
            (re->own[k++] = kv("MLX_WORLD_SIZE", num[1])) &&
            (re->own[k++] =
                 kv(mlx ? "DISTCOMM_HOSTFILE" : "MLX_HOSTFILE", e->hostfile)) &&
            (!mlx || (re->own[k++] = kv("MLX_MPI_LIBNAME", face))) &&
            (re->own[k++] = kv("DISTCOMM_JOB_ID", e->job_id)) &&
            (re->own[k++] = kv("DISTCOMM_JOB_TOKEN", e->job_token)) &&
            (!o->verbose || (re->own[k++] = kv("MLX_RING_VERBOSE", "1")));
  const char *maddr = e->master_addr ? e->master_addr : "127.0.0.1";
  if (ok && e->master_port != NULL) /* as torchrun sets them */
    ok = (re->own[k++] = kv("MASTER_ADDR", maddr)) &&
         (re->own[k++] = kv("MASTER_PORT", e->master_port)) &&
         (re->own[k++] = kv("RANK", num[0])) &&
         (re->own[k++] = kv("WORLD_SIZE", num[1])) &&
         (re->own[k++] = kv("LOCAL_RANK", num[2])) &&
         (re->own[k++] = kv("LOCAL_WORLD_SIZE", num[3]));
  if (!ok)
    return false;
  for (size_t i = 0; i < k; i++)
    re->v[n++] = re->own[i];
  for (size_t i = o->n_envs; i-- > 0;)
    if (!named(o->envs[i], re->v, n))
      re->v[n++] = (char *)o->envs[i];
  size_t ours = n; /* the environment yields to these */
  for (size_t i = 0; i < n_env; i++)
    if (!named(environ[i], re->v, ours) && !(mlx && mlx_ring_var(environ[i])))
      re->v[n++] = environ[i];
  re->v[n] = NULL;
  return true;
}

static void rank_env_free(struct rank_env *re) {
  for (size_t i = 0; i < sizeof re->own / sizeof re->own[0]; i++)
    free(re->own[i]);
  free(re->v);
}

/* Runs in the vforked child, on our memory: system calls only, no
 * allocation; never returns. fds: the child's ends. */
static void child(const struct dcl_launch_env *e, char **ssh_argv, char **envp,
                  const int fds[3], int report, int cpu) {
  dcl_signals_reset_in_child();
  /* A launcher killed with SIGKILL cannot stop its ranks; let the kernel. */
  (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != e->launcher_pid)
    _exit(127); /* it died before prctl took effect */
  /* Its own group, so that one kill() reaches everything the rank started. */
  if (setpgid(0, 0) != 0)
    child_fail(report, STAGE_SETUP);
  for (int i = 0; i < 3; i++)
    if (dup2(fds[i], i) < 0)
      child_fail(report, STAGE_SETUP);
  if (ssh_argv != NULL) { /* the rank's setup goes on its stdin (remote.c) */
    execvp(ssh_argv[0], ssh_argv);
    child_fail(report, STAGE_EXEC);
  }
  if (e->opts->cwd != NULL && chdir(e->opts->cwd) != 0)
    child_fail(report, STAGE_CHDIR);
  if (cpu >= 0) { /* a stack set and a system call: fine after vfork */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
      child_fail(report, STAGE_SETUP);
  }
  execvpe(e->argv[0], e->argv, envp);
  child_fail(report, STAGE_EXEC);
}

static void close_pair(int p[2]) {
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0)
      close(p[i]);
  p[0] = p[1] = -1;
}

/* pipes[0] stdin, [1] stdout, [2] stderr, [3] the exec report. */
static int make_pipes(int pipes[4][2]) {
  for (int i = 0; i < 4; i++)
    pipes[i][0] = pipes[i][1] = -1;
  for (int i = 0; i < 4; i++)
    if (pipe2(pipes[i], O_CLOEXEC) != 0)
      return -1;
  /* Our ends never block the loop: stdin's write end, the outputs' read ends.
   */
  int ours[3] = {pipes[0][1], pipes[1][0], pipes[2][0]};
  for (int i = 0; i < 3; i++)
    if (fcntl(ours[i], F_SETFL, O_NONBLOCK) != 0)
      return -1;
  return 0;
}

int dcl_rank_exited(struct dcl_rank *r, bool block) {
  siginfo_t si;
  si.si_pid = 0;
  int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  if (waitid(P_PID, (id_t)r->pid, &si, flags) != 0)
    return errno == EINTR ? 0 : -1;
  if (si.si_pid == 0)
    return 0;
  if (si.si_code == CLD_EXITED)
    r->wstatus = (si.si_status & 0xff) << 8;
  else /* CLD_KILLED, CLD_DUMPED: as waitpid would say */
    r->wstatus = (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
  r->running = false;
  r->unreaped = true;
  return 1;
}

void dcl_rank_reap(struct dcl_rank *r) {
  if (!r->unreaped)
    return;
  while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
    continue;
  r->unreaped = false;
}

static int explain(const struct dcl_launch_env *e, struct dcl_rank *r,
                   struct report rep) {
  int rank = r->index;
  while (dcl_rank_exited(r, true) == 0) /* its group may be signalled later */
    continue;
  r->running = false;
  const char *cmd = r->ssh_argv ? r->ssh_argv[0] : e->argv[0];
  if (rep.stage == STAGE_CHDIR) {
    dcl_error("rank %d: cannot change directory to '%s': %s", rank,
              e->opts->cwd, strerror(rep.err));
    return 1;
  }
  if (rep.stage == STAGE_SETUP) {
    dcl_error("rank %d: cannot set up the process: %s", rank,
              strerror(rep.err));
    return 1;
  }
  dcl_error("cannot run '%s': %s", cmd, strerror(rep.err));
  return rep.err == ENOENT ? 127 : 126;
}

/* Parent side after fork: keep our ends, wait for exec or its failure. */
static int adopt(struct dcl_rank *r, const struct dcl_launch_env *e,
                 int pipes[4][2]) {
  (void)setpgid(r->pid,
                r->pid); /* also here: no window where kill(-pid) misses */
  close(pipes[0][0]);
  close(pipes[1][1]);
  close(pipes[2][1]);
  close(pipes[3][1]);
  r->in_fd = pipes[0][1];
  r->running = true;
  int out_ok = dcl_stream_init(&r->out, pipes[1][0], 1);
  int err_ok = dcl_stream_init(&r->err, pipes[2][0], 2);
  struct report rep;
  ssize_t n;
  do {
    n = read(pipes[3][0], &rep, sizeof rep);
  } while (n < 0 && errno == EINTR);
  close(pipes[3][0]);
  if (n == (ssize_t)sizeof rep)
    return explain(e, r, rep);
  if (out_ok != 0 || err_ok != 0) {
    dcl_error("out of memory");
    return 1;
  }
  return 0;
}

int dcl_spawn_rank(struct dcl_rank *r, const struct dcl_launch_env *e) {
  int pipes[4][2];
  r->pid = -1;
  r->in_fd = r->out.fd = r->err.fd = -1;
  if (make_pipes(pipes) != 0) {
    dcl_error("rank %d: cannot create pipes: %s", r->index, strerror(errno));
    for (int i = 0; i < 4; i++)
      close_pair(pipes[i]);
    return 1;
  }
  struct rank_env env = {0}; /* a remote rank's ssh runs in ours */
  if (r->ssh_argv == NULL && !rank_env_build(&env, e, r)) {
    dcl_error("rank %d: out of memory for its environment", r->index);
    rank_env_free(&env);
    for (int i = 0; i < 4; i++)
      close_pair(pipes[i]);
    return 1;
  }
  int fds[3] = {pipes[0][0], pipes[1][1], pipes[2][1]};
  /* Signals stay blocked until the child has reset its handlers, so that a
   * Ctrl-C in this window cannot run our handler in the child. */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  /* vfork, not fork: we wait for the exec anyway, and fork's copy of our
   * page tables, then the copy-on-write faults it leaves us (each one a
   * TLB flush on every core), were most of the launcher's CPU at 256
   * ranks (perf, on a 2-core VM). */
  r->pid = vfork();
  if (r->pid == 0)
    child(e, r->ssh_argv, env.v, fds, pipes[3][1], r->cpu);
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  rank_env_free(&env);
  if (r->pid < 0) {
    dcl_error("rank %d: fork failed: %s", r->index, strerror(fork_errno));
    for (int i = 0; i < 4; i++)
      close_pair(pipes[i]);
    return 1;
  }
  return adopt(r, e, pipes);
}

int dcl_bind_cpu(const struct dcl_options *o, int local, int count) {
  static bool said;
  cpu_set_t mine;
  if (!o->bind_core || sched_getaffinity(0, sizeof mine, &mine) != 0)
    return -1;
  if (count > CPU_COUNT(&mine)) {
    if (!said)
      dcl_error("--bind-to core: %d ranks here but %d CPUs to run on: not "
                "binding them",
                count, CPU_COUNT(&mine));
    said = true;
    return -1;
  }
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &mine) && seen++ == local)
      return cpu;
  return -1;
}
