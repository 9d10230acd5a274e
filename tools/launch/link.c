/* The launcher's end of each host's agent (wire.h): one ssh per host, the
 * setup of all of its ranks out, their output and ends in, as frames. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "job.h"
#include "remote.h"
#include "util.h"
#include "wire.h"

void dcl_remote_send(struct dcl_rank *link, char type, const void *data,
                     size_t len) {
  unsigned char hdr[DCL_WIRE_HEADER] = {(unsigned char)type};
  dcl_wire_put32(hdr + 1, len);
  dcl_input_push(link, (const char *)hdr, sizeof hdr);
  if (len > 0)
    dcl_input_push(link, data, len);
}

static void send_str(struct dcl_rank *link, char type, const char *s) {
  dcl_remote_send(link, type, s, strlen(s));
}

void dcl_remote_setup(struct dcl_job *j, int l,
                      const struct dcl_launch_env *e) {
  const struct dcl_options *o = e->opts;
  struct dcl_rank *link = &j->links[l];
  char num[32];
  snprintf(num, sizeof num, "%ld", o->nranks);
  send_str(link, DCL_W_SIZE, num);
  send_str(link, DCL_W_HOST, link->host);
  send_str(link, DCL_W_JOB, e->job_id);
  send_str(link, DCL_W_TOKEN, e->job_token);
  send_str(link, DCL_W_HOSTFILE, e->hostfile_json);
  send_str(link, o->cwd ? DCL_W_CWD : DCL_W_CWD_TRY, e->cwd);
  for (size_t i = 0; i < o->n_envs; i++)
    send_str(link, DCL_W_ENV, o->envs[i]);
  for (char **a = e->argv; *a != NULL; a++)
    send_str(link, DCL_W_ARG, *a);
  if (o->verbose)
    send_str(link, DCL_W_VERBOSE, "1");
  if (o->mlx)
    send_str(link, DCL_W_MLX, "1");
  if (o->bind_core)
    send_str(link, DCL_W_BIND, "1");
  if (e->master_addr != NULL && e->master_port != NULL) {
    send_str(link, DCL_W_MASTER_ADDR, e->master_addr);
    send_str(link, DCL_W_MASTER_PORT, e->master_port);
  }
  for (int i = 0; i < j->n; i++) {
    if (j->link_of[i] != l)
      continue;
    snprintf(num, sizeof num, "%d", i);
    send_str(link, DCL_W_RANK, num);
  }
  snprintf(num, sizeof num, "%ld", j->beat_ms);
  send_str(link, DCL_W_BEAT, num);
  send_str(link, DCL_W_GO, "");
}

/* Bytes for a rank's stream; once our side of it is gone, the agent closes
 * the rank's side too, as a local rank's pipe would be. */
static void take_output(struct dcl_job *j, int l, struct dcl_rank *r, int type,
                        const unsigned char *p, size_t len) {
  struct dcl_stream *s = type == DCL_W_OUT ? &r->out : &r->err;
  if (s->buf == NULL ||
      dcl_stream_put(s, r->index, j->tag, (const char *)p, len))
    return;
  unsigned char who[DCL_WIRE_RANK];
  dcl_wire_put32(who, (unsigned long)r->index);
  dcl_remote_send(&j->links[l],
                  type == DCL_W_OUT ? DCL_W_SHUT_OUT : DCL_W_SHUT_ERR, who,
                  sizeof who);
}

/* One frame from link l's agent; frames naming no rank of its host are
 * ignored. */
static void take_frame(struct dcl_job *j, int l, int type,
                       const unsigned char *p, size_t len) {
  unsigned long rank =
      len >= DCL_WIRE_RANK ? dcl_wire_get32(p) : (unsigned long)j->n;
  if (rank >= (unsigned long)j->n || j->link_of[rank] != l)
    return;
  struct dcl_rank *r = &j->ranks[rank];
  p += DCL_WIRE_RANK;
  len -= DCL_WIRE_RANK;
  if (type == DCL_W_OUT || type == DCL_W_ERR) {
    take_output(j, l, r, type, p, len);
  } else if (type == DCL_W_EXIT && len == 4 && r->running) {
    r->running = false;
    r->wstatus = (int)(dcl_wire_get32(p) & 0xff)
                 << 8; /* as the agent's exit status was */
    dcl_job_rank_exited(j, r);
  }
}

/* Not our agent talking: drop the link; its ranks end with the ssh. */
static int garbled(struct dcl_job *j, int l) {
  struct dcl_rank *link = &j->links[l];
  dcl_error("host %s: garbled frames from the agent; dropping the connection",
            link->host);
  link->out.len = 0;
  dcl_stream_finish(&link->out, link->index, false);
  (void)kill(link->pid, SIGTERM);
  return -1;
}

/* The frames are gathered in the link's stdout buffer (DCL_LINE_MAX bytes,
 * more than the largest frame). */
int dcl_remote_pump(struct dcl_job *j, int l) {
  struct dcl_stream *s = &j->links[l].out;
  ssize_t n;
  do {
    n = read(s->fd, s->buf + s->len, DCL_LINE_MAX - s->len);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return 0;
  if (n <= 0) {
    s->len = 0;
    dcl_stream_finish(s, j->links[l].index, false);
    return -1;
  }
  s->len += (size_t)n;
  size_t off = 0;
  while (s->len - off >= DCL_WIRE_HEADER) {
    const unsigned char *h = (const unsigned char *)s->buf + off;
    size_t len = dcl_wire_get32(h + 1);
    if (len > DCL_LINE_MAX - DCL_WIRE_HEADER)
      return garbled(j, l);
    if (s->len - off - DCL_WIRE_HEADER < len)
      break;
    if (h[0] == DCL_W_ACK && len == DCL_WIRE_RANK + 4)
      j->links[l].in_acked += dcl_wire_get32(h + DCL_WIRE_HEADER + 4);
    else
      take_frame(j, l, h[0], h + DCL_WIRE_HEADER, len);
    off += DCL_WIRE_HEADER + len;
  }
  memmove(s->buf, s->buf + off, s->len - off);
  s->len -= off;
  return 1;
}
