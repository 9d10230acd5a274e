/* The setup the agent gets from the launcher before its ranks start
 * (wire.h: DCL_W_RANK ... DCL_W_GO), kept frame by frame. Apart from the
 * agent's I/O so that the fuzzer (tests/fuzz/fuzz_agent_wire.c) runs it. */
#ifndef DCL_AGENT_SETUP_H
#define DCL_AGENT_SETUP_H

#include <stddef.h>

#include "inbox.h"
#include "options.h"
#include "spawn.h"

/* strs[]: owned single values, by these indexes. */
enum {
  DCL_S_JOB,
  DCL_S_TOKEN,
  DCL_S_HOSTFILE,
  DCL_S_CWD,
  DCL_S_CWD_TRY,
  DCL_S_HOST,
  DCL_S_MASTER_ADDR,
  DCL_S_MASTER_PORT,
  DCL_S_N
};

struct dcl_agent_setup {
  struct dcl_options opts;
  struct dcl_launch_env env;
  int *ranks; /* the MLX_RANKs to run here */
  size_t n_ranks;
  char *strs[DCL_S_N];
  char **argv;
  size_t argc;
  long beat_ms; /* the launcher's heartbeat interval; 0: none promised */
};

/* Keeps one frame of the setup. Returns 1 on DCL_W_GO, 0 to go on, -1 for a
 * frame that has no place in a setup (or no memory). */
int dcl_setup_take(struct dcl_agent_setup *s, const struct dcl_frame *f);

void dcl_setup_free(struct dcl_agent_setup *s);

#endif
