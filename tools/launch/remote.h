/* Ranks on other hosts, started over ssh: checking the hosts first, ports,
 * the hostfile, and the setup each rank's agent receives (see wire.h). */
#ifndef DCL_REMOTE_H
#define DCL_REMOTE_H

#include <stddef.h>

#include "hosts.h"
#include "options.h"
#include "rank.h"
#include "spawn.h"

/* Runs the job on the plan's hosts; returns the launcher's exit status. */
int dcl_remote_launch(const struct dcl_options *o, const struct dcl_plan *p, char **argv);

/* Queues one frame on a remote rank's ssh stdin. */
void dcl_remote_send(struct dcl_rank *r, char type, const void *data, size_t len);

/* Queues everything rank r's agent needs, ending with DCL_W_GO. */
void dcl_remote_setup(struct dcl_rank *r, const struct dcl_launch_env *e);

/* The remote end: `distcomm-launch --remote-agent`. Returns its exit status. */
int dcl_agent_main(void);

#endif
