/* Running a shell command on several hosts at once over ssh, every wait
 * bounded. The ssh command is $DISTCOMM_SSH (default "ssh", split on
 * spaces, like Open MPI's plm_rsh_agent) plus -o BatchMode=yes
 * -o ConnectTimeout=5: a password prompt is an error, never a hang. */
#ifndef DCC_REMOTE_H
#define DCC_REMOTE_H

#include <stdbool.h>
#include <stddef.h>

struct dcc_job {
  const char *host;   /* ssh destination */
  const char *script; /* remote shell command; NULL: nothing to run */
  char *out;          /* its stdout, NUL-terminated (malloc'd) */
  char err[1024];     /* the end of its stderr */
  int status;         /* exit status; -1 when it did not run or was killed */
  bool timed_out;
};

/* Set from --verbose: each command is logged to stderr before it runs. */
extern bool dcc_verbose;

/* Runs every job at once; returns when all have ended, or after timeout_s
 * seconds with the rest killed. Returns the number of jobs that failed.
 * When stderr is a terminal and step is not NULL, prints a line per host as
 * its job ends: "distcomm-config: STEP: HOST answered (k/n)". */
int dcc_ssh_all(struct dcc_job *jobs, int n, int timeout_s, const char *step);

/* Frees the jobs' outputs. */
void dcc_jobs_free(struct dcc_job *jobs, int n);

/* One line naming why job j failed: "ssh exited with status 255: <stderr>". */
const char *dcc_job_why(const struct dcc_job *j, char *buf, size_t len);

#endif
