/* The running job: every rank, the poll loop, and stopping on failure. */
#ifndef DCL_JOB_H
#define DCL_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "rank.h"
#include "spawn.h"

/* After a rank fails, how long the others get to exit on their own before
 * SIGTERM: distcomm ranks notice a dead peer within milliseconds and exit
 * with their own error line, which is worth seeing. */
#define DCL_SETTLE_MS 1000
/* How long ranks get between SIGTERM and SIGKILL. */
#define DCL_GRACE_MS 2000
/* How long we keep forwarding output after the last rank exited (pipes held
 * open by the ranks' leftover children must not keep us waiting). */
#define DCL_DRAIN_MS 2000

struct dcl_job {
  struct dcl_rank *ranks;
  int n;       /* ranks allocated */
  int started; /* ranks forked so far */
  bool tag;
  bool stdin_open; /* still reading our own stdin */
  bool stopping;   /* a rank failed or we were told to stop; ranks that
                      exit now are not failures */
  bool termed;     /* SIGTERM sent */
  bool killed;     /* SIGKILL sent */
  int exit_code;
  /* --keep-going: a rank that ends badly does not stop the others. */
  bool keep_going;
  int finished_ok;  /* ranks that exited 0 */
  int lost;         /* ranks killed by a signal or whose host was lost */
  int own_status;   /* the last non-zero status a rank exited with itself */
  int lost_status;  /* the last lost rank's status (128 + signal, 255) */
  int stop_signals; /* SIGINT/SIGTERM/SIGHUP seen, to escalate on a second one
                     */
  int64_t term_at, kill_at;
  int64_t drain_until; /* 0 until every rank has exited */
  long beat_ms;        /* heartbeats to the agents every beat_ms (wire.h) */
  int64_t beat_at;
  /* Remote ranks: one ssh per host runs the agent that runs all of the
   * host's ranks (one login each, whatever sshd's MaxStartups); those
   * ranks' streams get their bytes from its frames (link.c). */
  struct dcl_rank *links; /* the ssh processes */
  int n_links;
  int links_started;
  int *link_of; /* rank -> its link, -1 for a local rank */
};

/* Allocates n ranks. Returns 0 or -1 (no memory). */
int dcl_job_init(struct dcl_job *j, int n, bool tag);

/* Makes room for n_links ssh links (remote.c then fills in each one's host
 * and ssh_argv, and link_of). Returns 0 or -1 (no memory). */
int dcl_job_add_links(struct dcl_job *j, int n_links);

/* Rank r has ended (r->wstatus set): a failure stops the job. */
void dcl_job_rank_exited(struct dcl_job *j, struct dcl_rank *r);

/* Starts every rank. Returns 0, or the exit status after a rank could not be
 * started (the ones already running have been stopped). */
int dcl_job_start(struct dcl_job *j, const struct dcl_launch_env *e);

/* Runs until every rank has exited; returns the launcher's exit status. */
int dcl_job_run(struct dcl_job *j);

/* Stops whatever still runs (SIGTERM, grace period, SIGKILL), then frees. */
void dcl_job_free(struct dcl_job *j);

#endif
