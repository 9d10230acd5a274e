/* Starting one rank: pipes, its own process group, its environment, exec. */
#ifndef DCL_SPAWN_H
#define DCL_SPAWN_H

#include <sys/types.h>

#include "options.h"
#include "rank.h"

/* What every rank shares. */
struct dcl_launch_env {
  const struct dcl_options *opts;
  char **argv;               /* the command to exec (NULL-terminated) */
  const char *hostfile;      /* MLX_HOSTFILE */
  const char *job_id;        /* DISTCOMM_JOB_ID */
  const char *job_token;     /* DISTCOMM_JOB_TOKEN */
  pid_t launcher_pid;        /* to notice a launcher that died during fork */
  const char *hostfile_json; /* remote ranks: the hostfile's content */
  const char *cwd;           /* remote ranks: --cwd, or the launcher's cwd */
  /* torchrun's variables (spawn.c): rank 0's host as the others reach it
   * (NULL: 127.0.0.1), a port free there, this host's rank count (0: all) */
  const char *master_addr;
  const char *master_port;
  int local_size;
};

/* Forks and execs rank r->index (for a remote rank: its r->ssh_argv, with
 * our own environment and directory). Returns 0 once the command runs, or,
 * after printing one line saying why it could not be run, the exit status the
 * launcher should end with (127 not found, 126 not executable, 1 other). */
int dcl_spawn_rank(struct dcl_rank *r, const struct dcl_launch_env *e);

/* --bind-to core: the CPU for the local-th of count ranks started on this
 * host (the local-th CPU this process may run on), or -1 when there are
 * more ranks than CPUs (said once) or binding was not asked for. */
int dcl_bind_cpu(const struct dcl_options *o, int local, int count);

/* Whether r's process has ended (waiting for it when `block`), without
 * reaping it: 1 with r->wstatus set, r->running false and r->unreaped true;
 * 0 while it runs; -1 on an error. Reap with dcl_rank_reap after the last
 * kill of its group. */
int dcl_rank_exited(struct dcl_rank *r, bool block);

/* Reaps r's process if it has ended unreaped. */
void dcl_rank_reap(struct dcl_rank *r);

#endif
