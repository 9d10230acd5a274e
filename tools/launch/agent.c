/* `distcomm-launch --remote-agent`: the launcher's hands on a remote host,
 * started over ssh, one per host (one login, however many ranks: sshd's
 * MaxStartups would drop the rest). It reads the setup from stdin (wire.h),
 * writes the hostfile to a private file, starts each rank in its own
 * process group and passes their output and ends back as frames. When the
 * launcher asks (DCL_W_STOP) or goes away (the ssh channel ends) it stops
 * every group: SIGTERM, then SIGKILL after a grace period. Whatever a rank
 * left in its group gets SIGTERM when the rank exits and SIGKILL when its
 * end is reported: on a remote host nobody would see it, so nothing of the
 * job outlives its agent. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_setup.h"
#include "forward.h"
#include "inbox.h"
#include "hostfile.h"
#include "job.h"
#include "remote.h"
#include "signals.h"
#include "util.h"
#include "wire.h"

/* The launcher's frames, during the setup and after. */
static struct dcl_inbox g_in;

static bool is_dir(const char *path) {
  struct stat st;
  return path != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the setup; returns 0, or the exit status after saying why not. */
static int read_setup(struct dcl_agent_setup *s) {
  int rc = 0;
  struct dcl_frame f;
  while (rc == 0) {
    int got = dcl_inbox_next(&g_in, &f);
    if (got == 1)
      rc = dcl_setup_take(s, &f);
    else if (got < 0 || dcl_inbox_read(&g_in, 0) < 0)
      rc = -1; /* DCL_INBOX_AGAIN (EINTR): read again */
  }
  if (rc != 1 || s->argc == 0 || s->n_ranks == 0) {
    dcl_error("the launcher's setup was cut short or garbled");
    return 1;
  }
  char **v = s->strs;
  snprintf(dcl_where, sizeof dcl_where, "on %s",
           v[DCL_S_HOST] ? v[DCL_S_HOST] : "?");
  s->env.opts = &s->opts;
  s->env.argv = s->argv;
  s->env.job_id = v[DCL_S_JOB] ? v[DCL_S_JOB] : "";
  s->env.job_token = v[DCL_S_TOKEN] ? v[DCL_S_TOKEN] : "";
  s->opts.cwd = v[DCL_S_CWD]               ? v[DCL_S_CWD]
                : is_dir(v[DCL_S_CWD_TRY]) ? v[DCL_S_CWD_TRY]
                                           : NULL;
  if (v[DCL_S_CWD] != NULL && !is_dir(v[DCL_S_CWD])) {
    dcl_error("cannot change directory to '%s': no such directory",
              v[DCL_S_CWD]);
    return 1;
  }
  s->env.hostfile =
      dcl_write_hostfile_text(v[DCL_S_HOSTFILE] ? v[DCL_S_HOSTFILE] : "[]");
  s->env.launcher_pid = getpid();
  s->env.master_addr = v[DCL_S_MASTER_ADDR];
  s->env.master_port = v[DCL_S_MASTER_PORT];
  s->env.local_size = (int)s->n_ranks;
  return s->env.hostfile == NULL ? 1 : 0;
}

/* ---- running ------------------------------------------------------------ */

struct arank {
  struct dcl_rank r;
  bool termed;   /* SIGTERM sent: its signal death is no news */
  bool reported; /* its DCL_W_EXIT went out */
  int status;    /* what DCL_W_EXIT says */
  int64_t kill_at, drain_until;
};

struct agent {
  struct arank *ranks;
  size_t n;
  bool eof_sent, link_lost;
  bool failed;  /* the link broke its rules, or fell silent: exit 1 */
  long beat_ms; /* the launcher's heartbeat interval (0: none) */
  int64_t heard_at;
  /* Our stdin while a rank's queue is full: held here, so that the link is
   * still read and its heartbeats still count. The launcher sends at most
   * DCL_INPUT_WINDOW bytes ahead of our acknowledgements. */
  char *held;
  size_t held_len, held_cap;
  bool held_eof;
};

#define HELD_MAX (2 * (size_t)DCL_INPUT_WINDOW)

/* Messages about one rank name it, as the launcher would. */
static void where_rank(int rank, const char *host) {
  snprintf(dcl_where, sizeof dcl_where, "rank %d on %s", rank,
           host ? host : "?");
}

/* One frame to the launcher; a dead channel is the launcher gone. */
static void send_frame(struct agent *a, char type, int rank, const void *data,
                       size_t len) {
  static unsigned char f[DCL_WIRE_HEADER + DCL_WIRE_RANK + DCL_WIRE_CHUNK];
  f[0] = (unsigned char)type;
  dcl_wire_put32(f + 1, DCL_WIRE_RANK + len);
  dcl_wire_put32(f + DCL_WIRE_HEADER, (unsigned long)rank);
  memcpy(f + DCL_WIRE_HEADER + DCL_WIRE_RANK, data,
         len); /* len <= DCL_WIRE_CHUNK */
  if (!a->link_lost &&
      dcl_write_all(1, f, DCL_WIRE_HEADER + DCL_WIRE_RANK + len) != 0)
    a->link_lost = true;
}

static void stop_rank(struct arank *k) {
  if (k->termed) {
    (void)kill(-k->r.pid, SIGKILL);
    return;
  }
  k->termed = true;
  k->kill_at = dcl_now_ms() + DCL_GRACE_MS;
  (void)kill(-k->r.pid, SIGTERM);
  (void)kill(-k->r.pid, SIGCONT);
}

static void stop_all(struct agent *a) {
  for (size_t i = 0; i < a->n; i++)
    if (a->ranks[i].r.running && !a->ranks[i].termed)
      stop_rank(&a->ranks[i]);
}

static struct arank *rank_of(struct agent *a, const unsigned char *payload,
                             size_t len) {
  if (len < DCL_WIRE_RANK)
    return NULL;
  unsigned long rank = dcl_wire_get32(payload);
  for (size_t i = 0; i < a->n; i++)
    if ((unsigned long)a->ranks[i].r.index == rank)
      return &a->ranks[i];
  return NULL;
}

/* Our stdout or stderr reader went away: so does the rank's (EPIPE there). */
static void shut_stream(struct agent *a, int type, const unsigned char *payload,
                        size_t len) {
  struct arank *k = rank_of(a, payload, len);
  if (k != NULL)
    dcl_stream_finish(type == DCL_W_SHUT_OUT ? &k->r.out : &k->r.err,
                      k->r.index, false);
}

/* A rank that does not read its stdin holds up the others' input. */
static bool input_full(const struct agent *a) {
  for (size_t i = 0; i < a->n; i++)
    if (a->ranks[i].r.inq.len - a->ranks[i].r.inq.off >= DCL_INQ_MAX)
      return true;
  return false;
}

/* Our stdin goes to every rank, as it does for local ones; what went is
 * acknowledged, so that the launcher sends more. */
static void deliver(struct agent *a, int type, const char *payload,
                    size_t len) {
  a->eof_sent = type == DCL_W_EOF;
  for (size_t i = 0; i < a->n; i++)
    if (type == DCL_W_INPUT)
      dcl_input_push(&a->ranks[i].r, payload, len);
    else
      dcl_input_flush(&a->ranks[i].r, true);
  unsigned char n[4];
  dcl_wire_put32(n, (unsigned long)len);
  if (len > 0)
    send_frame(a, DCL_W_ACK, 0, n, sizeof n);
}

static void link_broken(struct agent *a, size_t len);

static void hold(struct agent *a, int type, const char *payload, size_t len) {
  if (type == DCL_W_EOF) {
    a->held_eof = true;
    return;
  }
  if (a->held_len + len > HELD_MAX) {
    dcl_error("the launcher sent %zu bytes of stdin past its window; "
              "stopping the ranks",
              a->held_len + len);
    a->link_lost = a->failed = true;
    return;
  }
  if (a->held_len + len > a->held_cap) {
    char *grown = realloc(a->held, HELD_MAX);
    if (grown == NULL) {
      link_broken(a, 0);
      return;
    }
    a->held = grown;
    a->held_cap = HELD_MAX;
  }
  memcpy(a->held + a->held_len, payload, len);
  a->held_len += len;
}

static void on_input(struct agent *a, int type, const char *payload,
                     size_t len) {
  if (a->eof_sent || a->held_eof)
    return;
  if (a->held_len > 0 || input_full(a))
    hold(a, type, payload, len);
  else
    deliver(a, type, payload, len);
}

/* What was held goes on once every rank's queue has room again. */
static void release_held(struct agent *a) {
  if ((a->held_len == 0 && !a->held_eof) || input_full(a))
    return;
  if (a->held_len > 0)
    deliver(a, DCL_W_INPUT, a->held, a->held_len);
  a->held_len = 0;
  if (a->held_eof)
    deliver(a, DCL_W_EOF, NULL, 0);
  a->held_eof = false;
}

/* Not our launcher talking, or not in its rules: the link counts as lost. */
static void link_broken(struct agent *a, size_t len) {
  if (len > 0)
    dcl_error("the launcher sent a frame of %zu bytes (the most is %u); "
              "stopping the ranks",
              len, DCL_WIRE_MAX);
  else
    dcl_error("out of memory for the launcher's frames; stopping the ranks");
  a->link_lost = a->failed = true;
}

/* Handles the complete frames in g_in. */
static void handle_frames(struct agent *a) {
  struct dcl_frame f;
  int got;
  while ((got = dcl_inbox_next(&g_in, &f)) == 1) {
    if (f.type == DCL_W_INPUT || f.type == DCL_W_EOF)
      on_input(a, f.type, (const char *)f.payload, f.len);
    else if (f.type == DCL_W_STOP)
      stop_all(a);
    else if (f.type == DCL_W_SHUT_OUT || f.type == DCL_W_SHUT_ERR)
      shut_stream(a, f.type, f.payload, f.len);
  }
  if (got < 0)
    link_broken(a, f.len);
}

/* The launcher's side of the channel; its end means the launcher is gone. */
static void read_link(struct agent *a) {
  long n = dcl_inbox_read(&g_in, 0);
  if (n == DCL_INBOX_AGAIN)
    return;
  if (n == DCL_INBOX_NOMEM)
    link_broken(a, 0);
  else if (n == DCL_INBOX_END)
    a->link_lost = true;
  else {
    a->heard_at = dcl_now_ms(); /* a heartbeat or any other frame */
    handle_frames(a);
  }
}

/* Sends what the rank wrote on s; closes s at its end. */
static void pump(struct agent *a, struct arank *k, struct dcl_stream *s,
                 char type) {
  char buf[DCL_WIRE_CHUNK];
  ssize_t n;
  do {
    n = read(s->fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return;
  if (n <= 0) {
    dcl_stream_finish(s, k->r.index, false);
    return;
  }
  send_frame(a, type, k->r.index, buf, (size_t)n);
}

static int status_of(struct arank *k, const char *host) {
  int st = k->r.wstatus;
  if (WIFEXITED(st))
    return WEXITSTATUS(st);
  int sig = WTERMSIG(st);
  if (!k->termed) {
    where_rank(k->r.index, host);
    dcl_error("killed by signal %d (%s)", sig, strsignal(sig));
  }
  return 128 + sig;
}

static void reap(struct arank *k) {
  /* Not reaped until its group's last kill (run_ranks): the pid stays ours. */
  if (!k->r.running || dcl_rank_exited(&k->r, false) != 1)
    return;
  dcl_input_close(&k->r);
  /* What the rank left in its group has no one to answer to here. */
  (void)kill(-k->r.pid, SIGTERM);
  k->drain_until = dcl_now_ms() + DCL_DRAIN_MS;
}

/* A rank's end goes out after its output (or after the drain time, when
 * leftovers of its group hold its pipes open). */
static void report(struct agent *a, struct arank *k, const char *host) {
  bool streams = k->r.out.fd >= 0 || k->r.err.fd >= 0;
  if (k->reported || k->r.running || (streams && dcl_now_ms() < k->drain_until))
    return;
  dcl_stream_finish(&k->r.out, k->r.index, false);
  dcl_stream_finish(&k->r.err, k->r.index, false);
  if (k->r.pid > 0) {
    k->status = status_of(k, host);
    (void)kill(-k->r.pid, SIGKILL); /* nothing of the job outlives its report */
  }
  unsigned char st[4];
  dcl_wire_put32(st, (unsigned long)k->status);
  send_frame(a, DCL_W_EXIT, k->r.index, st, sizeof st);
  k->reported = true;
}

/* What a pollfd entry stands for: the link, a rank's stdout (0), stderr (1)
 * or stdin (2). */
struct watch {
  struct arank *k;
  int what;
};

static size_t watch_rank(struct pollfd *p, struct watch *w, size_t n,
                         struct arank *k) {
  if (k->r.out.fd >= 0)
    p[n] = (struct pollfd){k->r.out.fd, POLLIN, 0},
    w[n++] = (struct watch){k, 0};
  if (k->r.err.fd >= 0)
    p[n] = (struct pollfd){k->r.err.fd, POLLIN, 0},
    w[n++] = (struct watch){k, 1};
  if (k->r.in_fd >= 0 && k->r.inq.len > k->r.inq.off)
    p[n] = (struct pollfd){k->r.in_fd, POLLOUT, 0},
    w[n++] = (struct watch){k, 2};
  return n;
}

static void dispatch(struct agent *a, const struct watch *w) {
  if (w->k == NULL) {
    read_link(a);
  } else if (w->what == 0) {
    pump(a, w->k, &w->k->r.out, DCL_W_OUT);
  } else if (w->what == 1) {
    pump(a, w->k, &w->k->r.err, DCL_W_ERR);
  } else {
    dcl_input_flush(&w->k->r, a->eof_sent);
  }
}

static void poll_once(struct agent *a, struct pollfd *p, struct watch *w) {
  size_t n = 0;
  release_held(a);
  p[n] = (struct pollfd){dcl_signals_fd(), POLLIN, 0},
  w[n++] = (struct watch){NULL, -1};
  if (!a->link_lost)
    p[n] = (struct pollfd){0, POLLIN, 0}, w[n++] = (struct watch){NULL, 0};
  for (size_t i = 0; i < a->n; i++)
    n = watch_rank(p, w, n, &a->ranks[i]);
  if (poll(p, (nfds_t)n, 100) <= 0)
    return;
  for (size_t i = 1; i < n; i++)
    if (p[i].revents != 0)
      dispatch(a, &w[i]);
}

/* A partition keeps the channel open: silence for DCL_BEATS_MISSED beats
 * means the launcher is gone all the same. */
static void check_heartbeat(struct agent *a) {
  int64_t quiet = dcl_now_ms() - a->heard_at;
  if (a->beat_ms <= 0 || a->link_lost || quiet <= DCL_BEATS_MISSED * a->beat_ms)
    return;
  dcl_error("no heartbeat from the launcher for %lld ms; stopping the ranks",
            (long long)quiet);
  a->link_lost = a->failed = true;
}

static void check_signals(struct agent *a) {
  int count;
  if (dcl_signals_drain(&count) != 0)
    stop_all(a); /* sshd or someone there told us to stop */
}

/* Runs until every rank's end has been reported. */
static void supervise(struct agent *a, const char *host, struct pollfd *p,
                      struct watch *w) {
  bool said = false;
  for (;;) {
    check_signals(a);
    check_heartbeat(a);
    if (a->link_lost && !said) {
      said = true;
      dcl_info("the launcher is gone; stopping the ranks");
      stop_all(a);
    }
    bool all_done = true;
    int64_t now = dcl_now_ms();
    for (size_t i = 0; i < a->n; i++) {
      struct arank *k = &a->ranks[i];
      reap(k);
      if (k->r.running && k->termed && now >= k->kill_at) {
        stop_rank(k);
        k->kill_at = now + DCL_GRACE_MS;
      }
      report(a, k, host);
      all_done &= k->reported;
    }
    if (all_done)
      return;
    poll_once(a, p, w);
  }
}

/* Starts every rank; one that cannot start is reported with its status. */
static void start_all(struct agent *a, struct dcl_agent_setup *s) {
  for (size_t i = 0; i < a->n; i++) {
    struct arank *k = &a->ranks[i];
    k->r.index = s->ranks[i];
    k->r.local = (int)i;
    k->r.cpu = dcl_bind_cpu(&s->opts, (int)i, (int)a->n);
    where_rank(k->r.index, s->strs[DCL_S_HOST]);
    int rc = dcl_spawn_rank(&k->r, &s->env);
    if (rc != 0) {
      if (k->r.running) { /* it ran, but we could not keep up with it */
        (void)kill(-k->r.pid, SIGKILL);
        (void)waitpid(k->r.pid, NULL, 0);
      }
      dcl_rank_reap(&k->r); /* one that failed to exec, after its last kill */
      dcl_input_close(&k->r);
      k->r.pid = -1;
      k->r.running = false;
      k->status = rc;
    }
  }
  const char *host = s->strs[DCL_S_HOST];
  snprintf(dcl_where, sizeof dcl_where, "on %s", host ? host : "?");
}

static int run_ranks(struct dcl_agent_setup *s) {
  struct agent a = {
      .n = s->n_ranks, .beat_ms = s->beat_ms, .heard_at = dcl_now_ms()};
  a.ranks = calloc(a.n, sizeof *a.ranks);
  struct pollfd *p = calloc(2 + 3 * a.n, sizeof *p);
  struct watch *w = calloc(2 + 3 * a.n, sizeof *w);
  if (a.ranks != NULL && p != NULL && w != NULL) {
    start_all(&a, s);
    handle_frames(&a); /* what came along with the setup */
    supervise(&a, s->strs[DCL_S_HOST], p, w);
  } else {
    dcl_error("out of memory");
  }
  for (size_t i = 0; a.ranks != NULL && i < a.n; i++) {
    struct arank *k = &a.ranks[i];
    if (k->r.pid > 0)
      (void)kill(-k->r.pid,
                 SIGKILL); /* nothing of the job outlives its agent */
    dcl_rank_reap(&k->r);  /* only now: its pid was its group's id */
    dcl_input_close(&k->r);
    dcl_stream_finish(&k->r.out, k->r.index, false);
    dcl_stream_finish(&k->r.err, k->r.index, false);
  }
  int rc = a.ranks != NULL && p != NULL && w != NULL && !a.failed ? 0 : 1;
  free(a.ranks);
  free(a.held);
  free(p);
  free(w);
  return rc;
}

int dcl_agent_main(void) {
  struct dcl_agent_setup s;
  memset(&s, 0, sizeof s);
  if (dcl_signals_install() != 0) {
    dcl_error("cannot install signal handlers");
    return 1;
  }
  int rc = read_setup(&s);
  if (rc == 0)
    rc = run_ranks(&s);
  dcl_remove_hostfile();
  dcl_inbox_free(&g_in);
  dcl_setup_free(&s);
  return rc;
}
