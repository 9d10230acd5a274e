/* One rank as the launcher sees it: its process and its three pipes. A
 * remote rank's process is the ssh that runs it (see remote.h). */
#ifndef DCL_RANK_H
#define DCL_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A rank's stdout or stderr on its way to ours, kept whole line by line. */
struct dcl_stream {
  int fd;     /* our read end (non-blocking), -1 after EOF */
  int out_fd; /* 1 or 2: where its lines go */
  char *buf;  /* bytes of the line being read */
  size_t len;
  bool mid_line; /* the last write ended inside a line (a forced flush) */
};

/* Bytes of our stdin not yet written to one rank. */
struct dcl_inq {
  char *buf;
  size_t off, len, cap; /* pending bytes are buf[off .. len) */
};

struct dcl_rank {
  int index;
  int local;        /* its number among its host's ranks (LOCAL_RANK) */
  int cpu;          /* --bind-to core: the one CPU it may run on; -1: any */
  const char *host; /* the ssh name of a remote rank, NULL for a local one */
  char **ssh_argv;  /* remote: the ssh command that runs the agent there */
  pid_t pid;        /* also its process group id */
  bool running;     /* not reaped yet */
  int wstatus;      /* how it ended, once it has (dcl_rank_exited) */
  bool unreaped; /* ended but not reaped: a zombie holds its pid, so a kill of
                  * its group can never reach a stranger that got the pid */
  int in_fd;     /* write end of its stdin (non-blocking), -1 when closed */
  struct dcl_inq inq;
  struct dcl_stream out, err;
  /* a link: stdin bytes sent to its agent, and acknowledged (DCL_W_ACK) */
  unsigned long long in_sent, in_acked;
};

#endif
