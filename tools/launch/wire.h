/* The launcher and its agent on a remote host (distcomm-launch
 * --remote-agent, started over ssh, one per host) talk in frames: a type
 * byte, a 4-byte big-endian length, the payload. Everything the host's
 * ranks need travels this way, so the job token never appears on a command
 * line. On ssh's stdin: the setup (shared by the host's ranks, one
 * DCL_W_RANK per rank), DCL_W_GO, then our stdin for every rank
 * (DCL_W_INPUT, DCL_W_EOF) and requests; the end of the channel itself
 * means the launcher is gone, and the agent stops its ranks. On ssh's
 * stdout: the ranks' output and ends, each payload starting with the rank
 * (4 bytes, big-endian), since several ranks share the channel. ssh's
 * stderr carries only the agent's own messages, as lines. */
#ifndef DCL_WIRE_H
#define DCL_WIRE_H

enum dcl_wire {
  /* launcher -> agent */
  DCL_W_RANK = 'R',  /* one rank to run there: MLX_RANK, decimal */
  DCL_W_SIZE = 'W',  /* MLX_WORLD_SIZE, decimal */
  DCL_W_HOST = 'N',  /* the host's name as the launcher knows it (messages) */
  DCL_W_JOB = 'J',   /* DISTCOMM_JOB_ID */
  DCL_W_TOKEN = 'T', /* DISTCOMM_JOB_TOKEN */
  DCL_W_HOSTFILE =
      'F',             /* the ring hostfile's JSON, written to a private file */
  DCL_W_CWD = 'C',     /* --cwd: must exist */
  DCL_W_CWD_TRY = 'c', /* the launcher's cwd: used when it exists there */
  DCL_W_ENV = 'V',     /* one K=V (hostfile "envs", then --env) */
  DCL_W_ARG = 'A',     /* one word of the command */
  DCL_W_VERBOSE = 'B', /* --verbose */
  DCL_W_MLX = 'M',     /* --mlx */
  DCL_W_BIND = 'P',    /* --bind-to core */
  DCL_W_MASTER_ADDR = 'D', /* torchrun's MASTER_ADDR: rank 0's host address */
  DCL_W_MASTER_PORT = 'Q', /* MASTER_PORT: a port free on rank 0's host */
  DCL_W_GO = 'G',          /* start the ranks */
  DCL_W_INPUT = 'I',       /* bytes of our stdin */
  DCL_W_EOF = 'E',         /* our stdin ended */
  DCL_W_STOP = 'K', /* stop every rank (SIGTERM, then SIGKILL after a grace) */
  DCL_W_SHUT_OUT =
      'S', /* rank: our stdout is gone, so close its stdout (EPIPE) */
  DCL_W_SHUT_ERR = 's', /* rank: the same for stderr */
  DCL_W_BEAT = 'H', /* in the setup: the heartbeat interval (ms, decimal); after
                     * DCL_W_GO: one heartbeat. An agent that hears nothing for
                     * DCL_BEATS_MISSED intervals takes the launcher for gone (a
                     * partition leaves the channel open for many minutes). */
  /* agent -> launcher */
  DCL_W_OUT = 'o', /* rank, bytes of its stdout */
  DCL_W_ERR = 'e', /* rank, bytes of its stderr */
  DCL_W_EXIT =
      'x', /* rank, its status (4 bytes): exit code, 128+N for signal N */
  DCL_W_ACK = 'a', /* rank 0, a count (4 bytes): that many bytes of our stdin
                    * went to the ranks' queues (DCL_INPUT_WINDOW) */
};

/* The most stdin bytes the launcher sends an agent before it acknowledges
 * them: the agent can then always read its link, so the heartbeats behind a
 * rank's full stdin queue still arrive (and still count). */
#define DCL_INPUT_WINDOW (1u << 20)

/* 20 s at the default beat: an oversubscribed host can leave the launcher's
 * ssh without a core for seconds (24 busy ranks on 2 cores starved it 5.8 s
 * here, and 5 missed beats stopped a healthy job). */
#define DCL_BEATS_MISSED 20
#define DCL_BEAT_MS_DEFAULT 1000

#define DCL_WIRE_HEADER 5
#define DCL_WIRE_RANK 4 /* the rank at the front of the agent's payloads */
#define DCL_WIRE_MAX                                                           \
  (16u << 20) /* the largest payload (a hostfile of 4096 ranks fits) */
#define DCL_WIRE_CHUNK                                                         \
  16384 /* the most output bytes in one frame from the agent */

static inline void dcl_wire_put32(unsigned char *p, unsigned long v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static inline unsigned long dcl_wire_get32(const unsigned char *p) {
  return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 |
         (unsigned long)p[2] << 8 | p[3];
}

#endif
