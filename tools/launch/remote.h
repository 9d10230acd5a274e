/* Ranks on other hosts, started over ssh: checking the hosts first, ports,
 * the hostfile, and the one agent per host that runs them (see wire.h). */
#ifndef DCL_REMOTE_H
#define DCL_REMOTE_H

#include <stddef.h>

#include "hosts.h"
#include "options.h"
#include "rank.h"
#include "spawn.h"

/* Runs the job on the plan's hosts; returns the launcher's exit status. */
int dcl_remote_launch(const struct dcl_options *o, const struct dcl_plan *p,
                      char **argv);

struct dcl_job;

/* Queues one frame on the stdin of a link (the ssh running a host's agent). */
void dcl_remote_send(struct dcl_rank *link, char type, const void *data,
                     size_t len);

/* Queues everything link l's agent needs for its host's ranks, ending with
 * DCL_W_GO. */
void dcl_remote_setup(struct dcl_job *j, int l, const struct dcl_launch_env *e);

/* Reads link l's frames and passes them on: output to its ranks' streams,
 * ends to dcl_job_rank_exited(). Returns 1 after reading, 0 when nothing
 * was there, -1 once the link's stdout has closed. */
int dcl_remote_pump(struct dcl_job *j, int l);

/* The remote end: `distcomm-launch --remote-agent`. Returns its exit status. */
int dcl_agent_main(void);

#endif
