/* The launcher and its agent on a remote host (distcomm-launch
 * --remote-agent, started over ssh) talk on the ssh channel's stdin in
 * frames: a type byte, a 4-byte big-endian length, the payload. Everything
 * a rank needs travels this way, so the job token never appears on a
 * command line. After DCL_W_GO, frames carry our stdin (DCL_W_INPUT, then
 * DCL_W_EOF) and the request to stop (DCL_W_STOP); the end of the channel
 * itself means the launcher is gone, and the agent stops the rank. The
 * rank's output comes back on ssh's stdout and stderr, line by line, and
 * its end as the agent's exit status (128+N when killed by signal N). */
#ifndef DCL_WIRE_H
#define DCL_WIRE_H

enum dcl_wire {
    DCL_W_RANK = 'R',     /* MLX_RANK, decimal */
    DCL_W_SIZE = 'W',     /* MLX_WORLD_SIZE, decimal */
    DCL_W_HOST = 'N',     /* the host's name as the launcher knows it (messages) */
    DCL_W_JOB = 'J',      /* DISTCOMM_JOB_ID */
    DCL_W_TOKEN = 'T',    /* DISTCOMM_JOB_TOKEN */
    DCL_W_HOSTFILE = 'F', /* the ring hostfile's JSON, written to a private file */
    DCL_W_CWD = 'C',      /* --cwd: must exist */
    DCL_W_CWD_TRY = 'c',  /* the launcher's cwd: used when it exists there */
    DCL_W_ENV = 'V',      /* one K=V (hostfile "envs", then --env) */
    DCL_W_ARG = 'A',      /* one word of the command */
    DCL_W_VERBOSE = 'B',  /* --verbose */
    DCL_W_GO = 'G',       /* start the rank */
    DCL_W_INPUT = 'I',    /* bytes of our stdin */
    DCL_W_EOF = 'E',      /* our stdin ended */
    DCL_W_STOP = 'K',     /* stop the rank (SIGTERM, then SIGKILL after a grace) */
};

#define DCL_WIRE_HEADER 5
#define DCL_WIRE_MAX (16u << 20) /* the largest payload (a hostfile of 4096 ranks fits) */

#endif
