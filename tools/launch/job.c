#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "job.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forward.h"
#include "remote.h"
#include "signals.h"
#include "wire.h"
#include "util.h"

/* What one pollfd entry stands for. */
enum watch_kind {
  W_SIGNALS,
  W_STDIN,
  W_OUT,
  W_ERR,
  W_IN,
  W_LINK_OUT,
  W_LINK_ERR,
  W_LINK_IN
};
struct watch {
  enum watch_kind kind;
  int rank; /* or the link, for W_LINK_* */
};

static struct pollfd *g_pfds;
static struct watch *g_watch;

int dcl_job_init(struct dcl_job *j, int n, bool tag) {
  memset(j, 0, sizeof *j);
  j->ranks = calloc((size_t)n, sizeof *j->ranks);
  g_pfds = calloc(2 + 3 * (size_t)n, sizeof *g_pfds);
  g_watch = calloc(2 + 3 * (size_t)n, sizeof *g_watch);
  if (j->ranks == NULL || g_pfds == NULL || g_watch == NULL)
    return -1;
  j->n = n;
  j->tag = tag;
  j->stdin_open = true;
  for (int i = 0; i < n; i++) {
    struct dcl_rank *r = &j->ranks[i];
    r->index = i;
    r->cpu = -1;
    r->pid = -1;
    r->in_fd = r->out.fd = r->err.fd = -1;
  }
  return 0;
}

int dcl_job_add_links(struct dcl_job *j, int n_links) {
  size_t watches = 2 + 3 * ((size_t)j->n + (size_t)n_links);
  struct pollfd *p = realloc(g_pfds, watches * sizeof *p);
  g_pfds = p ? p : g_pfds;
  struct watch *w = realloc(g_watch, watches * sizeof *w);
  g_watch = w ? w : g_watch;
  j->links = calloc((size_t)n_links, sizeof *j->links);
  j->link_of = malloc((size_t)j->n * sizeof *j->link_of);
  if (p == NULL || w == NULL || j->links == NULL || j->link_of == NULL)
    return -1;
  j->n_links = n_links;
  for (int l = 0; l < n_links; l++) {
    j->links[l].pid = -1;
    j->links[l].in_fd = j->links[l].out.fd = j->links[l].err.fd = -1;
  }
  return 0;
}

/* A link's agent stops its ranks when asked (and says how they ended);
 * killing the ssh ends the connection, and the agent kills them then. */
static void signal_links(struct dcl_job *j, int sig) {
  for (int l = 0; l < j->links_started; l++) {
    struct dcl_rank *s = &j->links[l];
    if (s->pid <= 0 || !s->running)
      continue;
    if (sig == SIGTERM)
      dcl_remote_send(s, DCL_W_STOP, NULL, 0);
    else if (kill(-s->pid, sig) != 0)
      (void)kill(s->pid, sig);
  }
}

/* Signals every rank's process group, exited ranks included: what a rank
 * left behind in its group belongs to the job too. */
static void signal_groups(struct dcl_job *j, int sig) {
  signal_links(j, sig);
  for (int i = 0; i < j->started; i++) {
    if (j->ranks[i].pid <= 0 || j->ranks[i].host != NULL)
      continue;
    if (kill(-j->ranks[i].pid, sig) != 0 && j->ranks[i].running)
      (void)kill(j->ranks[i].pid, sig); /* group not formed yet */
    if (sig == SIGTERM) /* a stopped (Ctrl-Z) rank would never see it */
      (void)kill(-j->ranks[i].pid, SIGCONT);
  }
}

static void term_now(struct dcl_job *j) {
  j->termed = true;
  j->kill_at = dcl_now_ms() + DCL_GRACE_MS;
  dcl_info("sending SIGTERM to every rank's process group");
  signal_groups(j, SIGTERM);
}

/* settle_ms: how long the other ranks may take to exit on their own. */
static void begin_stop(struct dcl_job *j, int exit_code, int settle_ms) {
  if (j->stopping)
    return;
  j->stopping = true;
  j->exit_code = exit_code;
  j->stdin_open = false;
  j->term_at = dcl_now_ms() + settle_ms;
  if (settle_ms == 0)
    term_now(j);
}

static void kill_now(struct dcl_job *j) {
  dcl_info("sending SIGKILL to every rank's process group");
  signal_groups(j, SIGKILL);
  j->killed = true;
}

/* Link l's ranks run once its ssh does; their bytes come in its frames. */
static int adopt_ranks(struct dcl_job *j, int l) {
  for (int i = 0; i < j->n; i++) {
    struct dcl_rank *r = &j->ranks[i];
    if (j->link_of[i] != l)
      continue;
    r->pid = j->links[l].pid;
    r->running = true;
    if (dcl_stream_init(&r->out, -1, 1) != 0 ||
        dcl_stream_init(&r->err, -1, 2) != 0) {
      dcl_error("out of memory");
      return 1;
    }
    dcl_info("rank %d started: pid %d, ssh to %s", i, (int)r->pid, r->host);
  }
  return 0;
}

static int start_links(struct dcl_job *j, const struct dcl_launch_env *e) {
  j->started = j->n; /* a rank counts once its link has started */
  for (int l = 0; l < j->n_links; l++) {
    int rc = dcl_spawn_rank(&j->links[l], e);
    j->links_started = l + 1;
    if (rc == 0) {
      dcl_remote_setup(j, l, e);
      rc = adopt_ranks(j, l);
    }
    if (rc != 0) {
      begin_stop(j, rc, 0);
      return rc;
    }
  }
  return 0;
}

int dcl_job_start(struct dcl_job *j, const struct dcl_launch_env *e) {
  if (j->n_links > 0)
    return start_links(j, e);
  for (int i = 0; i < j->n; i++) {
    j->ranks[i].cpu = dcl_bind_cpu(e->opts, i, j->n);
    j->ranks[i].local = i;
    int rc = dcl_spawn_rank(&j->ranks[i], e);
    j->started = i + 1;
    if (rc != 0) {
      begin_stop(j, rc, 0);
      return rc;
    }
    dcl_info("rank %d started: pid %d", i, (int)j->ranks[i].pid);
  }
  return 0;
}

static bool others_running(const struct dcl_job *j, int except) {
  for (int i = 0; i < j->started; i++)
    if (i != except && j->ranks[i].running)
      return true;
  return false;
}

/* A remote rank's end comes as a status from its host's agent, 128 + the
 * signal when one killed it (as a shell reports it); 0 when none did. */
static int remote_signal(const struct dcl_rank *r) {
  int code = WIFEXITED(r->wstatus) ? WEXITSTATUS(r->wstatus) : 0;
  return r->host != NULL && code > 128 && code < 128 + NSIG ? code - 128 : 0;
}

/* The one line that says which rank brought the job down (or, with
 * --keep-going, which one went), and why. *lost: killed or its host lost,
 * not an exit status of its own. */
static int report_failure(const struct dcl_job *j, const struct dcl_rank *r,
                          bool *lost) {
  char what[160];
  int code;
  *lost = true;
  if (r->host != NULL && WIFEXITED(r->wstatus) &&
      WEXITSTATUS(r->wstatus) == 255) {
    snprintf(what, sizeof what,
             "lost its ssh connection (ssh exited with status 255)");
    code = 255;
  } else if (WIFSIGNALED(r->wstatus) || remote_signal(r) > 0) {
    int sig = WIFSIGNALED(r->wstatus) ? WTERMSIG(r->wstatus) : remote_signal(r);
    snprintf(what, sizeof what, "was killed by signal %d (%s)", sig,
             strsignal(sig));
    code = 128 + sig;
  } else {
    code = WIFEXITED(r->wstatus) ? WEXITSTATUS(r->wstatus) : 1;
    snprintf(what, sizeof what, "exited with status %d", code);
    *lost = false;
  }
  const char *then = !others_running(j, r->index) ? ""
                     : j->keep_going ? "; the other ranks go on (--keep-going)"
                                     : "; stopping the other ranks";
  if (r->host != NULL)
    dcl_error("rank %d (on host %s) %s%s", r->index, r->host, what, then);
  else
    dcl_error("rank %d (pid %d on localhost) %s%s", r->index, (int)r->pid, what,
              then);
  return code;
}

/* --keep-going: count the rank's end; the job's status is decided when the
 * last rank has ended (keep_going_status). */
static void note_end(struct dcl_job *j, int code, bool lost) {
  if (lost) {
    j->lost++;
    j->lost_status = code;
  } else {
    j->own_status = code;
  }
}

/* The survivors' status: that of a rank that failed on its own (its
 * error is the job's), else 0 when some rank finished, else the last lost
 * rank's. */
static int keep_going_status(const struct dcl_job *j) {
  if (j->lost > 0)
    dcl_error("--keep-going: %d of %d ranks finished, %d lost (see above)",
              j->finished_ok, j->n, j->lost);
  if (j->own_status != 0)
    return j->own_status;
  return j->finished_ok > 0 ? 0 : j->lost_status;
}

void dcl_job_rank_exited(struct dcl_job *j, struct dcl_rank *r) {
  dcl_input_close(r); /* nobody reads its stdin any more */
  bool ok = WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0, lost;
  if (ok) {
    j->finished_ok++;
    dcl_info("rank %d (pid %d) exited normally", r->index, (int)r->pid);
  } else if (!j->stopping && j->keep_going) {
    int code = report_failure(j, r, &lost);
    note_end(j, code, lost);
  } else if (!j->stopping) {
    begin_stop(j, report_failure(j, r, &lost), DCL_SETTLE_MS);
  } else {
    dcl_info("rank %d (pid %d) stopped (wait status 0x%x)", r->index,
             (int)r->pid, (unsigned)r->wstatus);
  }
}

/* Link l's ssh has exited: what the agent said before is still in the
 * pipe; its ranks that reported no end share the ssh's (255: the
 * connection was lost). */
static void link_ended(struct dcl_job *j, int l) {
  struct dcl_rank *s = &j->links[l];
  while (s->out.fd >= 0 && dcl_remote_pump(j, l) > 0)
    continue;
  s->out.len = 0; /* a cut frame is no output */
  dcl_stream_finish(&s->out, s->index, false);
  dcl_input_close(s);
  for (int i = 0; i < j->n; i++)
    if (j->link_of[i] == l && j->ranks[i].running) {
      j->ranks[i].running = false;
      j->ranks[i].wstatus = s->wstatus;
      dcl_job_rank_exited(j, &j->ranks[i]);
    }
}

static void reap_links(struct dcl_job *j) {
  for (int l = 0; l < j->links_started; l++) {
    struct dcl_rank *s = &j->links[l];
    if (!s->running)
      continue;
    pid_t w = waitpid(s->pid, &s->wstatus, WNOHANG);
    if (w == 0 || (w < 0 && errno == EINTR))
      continue;
    s->running = false;
    if (w < 0)
      s->wstatus = 1 << 8;
    link_ended(j, l);
  }
}

static bool links_running(const struct dcl_job *j) {
  for (int l = 0; l < j->links_started; l++)
    if (j->links[l].running)
      return true;
  return false;
}

static void reap(struct dcl_job *j) {
  for (int i = 0; i < j->started; i++) {
    struct dcl_rank *r = &j->ranks[i];
    if (!r->running || r->host != NULL) /* a remote one ends by a frame */
      continue;
    /* Not reaped before the last kill of its group (dcl_job_free). */
    int w = dcl_rank_exited(r, false);
    if (w == 0)
      continue;
    r->running = false;
    if (w < 0) /* cannot happen for our own child; count it as a failure */
      r->wstatus = 1 << 8;
    dcl_job_rank_exited(j, r);
  }
  reap_links(j);
  if (!others_running(j, -1) && j->drain_until == 0) {
    j->drain_until = dcl_now_ms() + DCL_DRAIN_MS;
    j->stdin_open = false;
  }
}

/* Each agent takes a silent launcher for gone (wire.h: DCL_W_BEAT). */
static void beat(struct dcl_job *j, int64_t now) {
  if (j->links_started == 0 || now < j->beat_at)
    return;
  j->beat_at = now + j->beat_ms;
  for (int l = 0; l < j->links_started; l++)
    if (j->links[l].running)
      dcl_remote_send(&j->links[l], DCL_W_BEAT, NULL, 0);
}

static void check_signals(struct dcl_job *j) {
  int count;
  int sig = dcl_signals_drain(&count);
  if (count == j->stop_signals)
    return;
  j->stop_signals = count;
  if (j->stopping) { /* a second Ctrl-C: do not wait any longer */
    if (!j->termed)
      term_now(j);
    else if (!j->killed)
      kill_now(j);
    return;
  }
  const char *name = sigabbrev_np(sig);
  dcl_error("received SIG%s; stopping all ranks", name ? name : "?");
  begin_stop(j, 128 + sig, 0);
}

static bool streams_open(const struct dcl_job *j) {
  for (int i = 0; i < j->started; i++)
    if (j->ranks[i].out.fd >= 0 || j->ranks[i].err.fd >= 0)
      return true;
  for (int l = 0; l < j->links_started; l++)
    if (j->links[l].out.fd >= 0 || j->links[l].err.fd >= 0)
      return true;
  return false;
}

static bool queue_full(const struct dcl_rank *r) {
  return r->in_fd >= 0 && r->inq.len - r->inq.off >= DCL_INQ_MAX;
}

/* Reading our stdin would stop us (SIGTTIN) while we are in the background. */
static bool stdin_readable_now(const struct dcl_job *j) {
  if (!j->stdin_open || j->stopping)
    return false;
  if (isatty(0) && tcgetpgrp(0) != getpgrp())
    return false;
  /* A rank (or an agent) is not reading: do not queue without bound. */
  for (int i = 0; i < j->started; i++)
    if (queue_full(&j->ranks[i]))
      return false;
  for (int l = 0; l < j->links_started; l++)
    if (queue_full(&j->links[l]) ||
        j->links[l].in_sent - j->links[l].in_acked >= DCL_INPUT_WINDOW)
      return false;
  return true;
}

static int add_watch(int k, int fd, short events, enum watch_kind kind,
                     int rank) {
  g_pfds[k].fd = fd;
  g_pfds[k].events = events;
  g_pfds[k].revents = 0;
  g_watch[k].kind = kind;
  g_watch[k].rank = rank;
  return k + 1;
}

/* A rank's or a link's pipes; kinds[0..2]: its stdout, stderr, stdin. */
static int watch_pipes(int k, const struct dcl_rank *r,
                       const enum watch_kind kinds[3], int i) {
  if (r->out.fd >= 0)
    k = add_watch(k, r->out.fd, POLLIN, kinds[0], i);
  if (r->err.fd >= 0)
    k = add_watch(k, r->err.fd, POLLIN, kinds[1], i);
  if (r->in_fd >= 0 && r->inq.len > r->inq.off)
    k = add_watch(k, r->in_fd, POLLOUT, kinds[2], i);
  return k;
}

static int build_watches(const struct dcl_job *j) {
  static const enum watch_kind rank_kinds[3] = {W_OUT, W_ERR, W_IN};
  static const enum watch_kind link_kinds[3] = {W_LINK_OUT, W_LINK_ERR,
                                                W_LINK_IN};
  int k = add_watch(0, dcl_signals_fd(), POLLIN, W_SIGNALS, -1);
  if (stdin_readable_now(j))
    k = add_watch(k, 0, POLLIN, W_STDIN, -1);
  for (int i = 0; i < j->started; i++)
    k = watch_pipes(k, &j->ranks[i], rank_kinds, i);
  for (int l = 0; l < j->links_started; l++)
    k = watch_pipes(k, &j->links[l], link_kinds, l);
  return k;
}

static void read_stdin(struct dcl_job *j) {
  static char buf[65536];
  ssize_t n = read(0, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  /* Every rank gets it: a remote one through its host's agent. */
  for (int l = 0; l < j->links_started;
       l++) { /* ssh's stdin stays open: that is the link */
    dcl_remote_send(&j->links[l], n > 0 ? DCL_W_INPUT : DCL_W_EOF, buf,
                    n > 0 ? (size_t)n : 0);
    j->links[l].in_sent += n > 0 ? (size_t)n : 0;
  }
  for (int i = 0; i < j->started; i++) {
    if (j->ranks[i].host != NULL)
      continue;
    if (n > 0)
      dcl_input_push(&j->ranks[i], buf, (size_t)n);
    else
      dcl_input_flush(&j->ranks[i], true);
  }
  if (n <= 0)
    j->stdin_open = false; /* EOF (or unreadable): passed on as an EOF */
}

static void dispatch(struct dcl_job *j, int k) {
  int i = g_watch[k].rank;
  struct dcl_rank *r =
      i >= 0 && g_watch[k].kind < W_LINK_OUT ? &j->ranks[i] : NULL;
  struct dcl_rank *s =
      i >= 0 && g_watch[k].kind >= W_LINK_OUT ? &j->links[i] : NULL;
  switch (g_watch[k].kind) {
  case W_SIGNALS:
    break; /* check_signals() and reap() run every turn */
  case W_STDIN:
    read_stdin(j);
    break;
  case W_OUT:
    dcl_stream_pump(&r->out, r->index, j->tag);
    break;
  case W_ERR:
    dcl_stream_pump(&r->err, r->index, j->tag);
    break;
  case W_IN:
    dcl_input_flush(r, !j->stdin_open);
    break;
  case W_LINK_OUT:
    (void)dcl_remote_pump(j, i);
    break;
  case W_LINK_ERR:
    dcl_stream_pump(&s->err, s->index, false);
    break; /* the agent's own lines */
  case W_LINK_IN:
    dcl_input_flush(s, false);
    break;
  }
}

static int next_timeout(const struct dcl_job *j) {
  int64_t now = dcl_now_ms(), t = 1000; /* also re-checks a backgrounded tty */
  if (j->stopping && !j->termed && j->term_at - now < t)
    t = j->term_at - now;
  if (j->termed && !j->killed && j->kill_at - now < t)
    t = j->kill_at - now;
  if (j->drain_until != 0 && j->drain_until - now < t)
    t = j->drain_until - now;
  if (j->links_started > 0 && j->beat_at - now < t)
    t = j->beat_at - now;
  return t < 0 ? 0 : (int)t;
}

static void poll_once(struct dcl_job *j) {
  int k = build_watches(j);
  int ready = poll(g_pfds, (nfds_t)k, next_timeout(j));
  if (ready <= 0)
    return; /* timeout, or EINTR: the loop re-checks everything */
  for (int i = 0; i < k; i++)
    if (g_pfds[i].revents != 0)
      dispatch(j, i);
}

/* A link's stdout carries frames, not text: a cut frame is dropped. */
static void finish_link_streams(struct dcl_rank *s, int l) {
  s->out.len = 0;
  dcl_stream_finish(&s->out, l, false);
  dcl_stream_finish(&s->err, l, false);
}

static void finish_streams(struct dcl_job *j) {
  for (int i = 0; i < j->started; i++) {
    dcl_stream_finish(&j->ranks[i].out, i, j->tag);
    dcl_stream_finish(&j->ranks[i].err, i, j->tag);
  }
  for (int l = 0; l < j->links_started; l++)
    finish_link_streams(&j->links[l], l);
}

int dcl_job_run(struct dcl_job *j) {
  for (;;) {
    check_signals(j);
    reap(j);
    int64_t now = dcl_now_ms();
    if (j->stopping && !j->termed && now >= j->term_at)
      term_now(j);
    if (j->termed && !j->killed && now >= j->kill_at)
      kill_now(j);
    beat(j, now);
    bool ended = !streams_open(j) && !links_running(j);
    if (!others_running(j, -1) && (ended || now >= j->drain_until))
      break;
    poll_once(j);
  }
  finish_streams(j);
  if (j->stopping && !j->killed) /* leftovers in the ranks' groups */
    signal_groups(j, SIGKILL);
  if (j->stopping)
    return j->exit_code;
  return j->keep_going ? keep_going_status(j) : 0;
}

void dcl_job_free(struct dcl_job *j) {
  for (int i = 0; i < j->started; i++) {
    struct dcl_rank *r = &j->ranks[i];
    if (r->running &&
        r->host == NULL) { /* only on an early exit path: never leave orphans */
      (void)kill(-r->pid, SIGKILL);
      (void)waitpid(r->pid, NULL, 0);
      r->running = false;
    }
    if (r->host == NULL) /* after dcl_job_run's last kill of its group */
      dcl_rank_reap(r);
    dcl_input_close(r);
    dcl_stream_finish(&r->out, i, j->tag);
    dcl_stream_finish(&r->err, i, j->tag);
  }
  for (int l = 0; l < j->links_started; l++) {
    struct dcl_rank *s = &j->links[l];
    if (s->running) { /* the agent then stops its ranks */
      (void)kill(-s->pid, SIGKILL);
      (void)waitpid(s->pid, NULL, 0);
    }
    dcl_input_close(s);
    finish_link_streams(s, l);
  }
  free(j->links);
  free(j->link_of);
  free(j->ranks);
  free(g_pfds);
  free(g_watch);
  g_pfds = NULL;
  g_watch = NULL;
  memset(j, 0, sizeof *j);
}
