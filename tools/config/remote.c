#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

bool dcc_verbose;

#define MAX_ARGS 64
#define MAX_OUT (16u << 20)

struct proc {
  pid_t pid;
  int fd[2]; /* stdout, stderr; -1 once closed */
  size_t outlen, errlen;
  bool told; /* its progress line was printed */
};

/* A progress line per host as its ssh ends (only on a terminal: the waits
 * are seconds long, and logs stay free of it). */
struct progress {
  const char *step; /* NULL: none */
  int done, n;
};

static void tell(struct progress *pr, const struct dcc_job *j, struct proc *p) {
  if (pr->step == NULL || p->told || p->fd[0] >= 0 || p->fd[1] >= 0)
    return;
  p->told = true;
  fprintf(stderr, DCC_PROG ": %s: %s answered (%d/%d)\n", pr->step, j->host,
          ++pr->done, pr->n);
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* argv = $DISTCOMM_SSH words, the fixed options, host, script. */
static int build_argv(char *words, const char *host, const char *script,
                      char *argv[]) {
  int n = 0;
  for (char *save, *w = strtok_r(words, " ", &save); w && n < MAX_ARGS - 8;
       w = strtok_r(NULL, " ", &save))
    argv[n++] = w;
  if (n == 0)
    return -1;
  const char *fixed[] = {"-o", "BatchMode=yes", "-o", "ConnectTimeout=5"};
  for (size_t i = 0; i < 4; i++)
    argv[n++] = (char *)fixed[i];
  argv[n++] = (char *)host;
  argv[n++] = (char *)script;
  argv[n] = NULL;
  return 0;
}

static void log_command(const char *host, char *const argv[]) {
  if (!dcc_verbose)
    return;
  fprintf(stderr, DCC_PROG ": [%s] $", host);
  for (int i = 0; argv[i]; i++)
    fprintf(stderr, i && argv[i + 1] == NULL ? " '%s'" : " %s", argv[i]);
  fputc('\n', stderr);
}

static void child(char *const argv[], int out[2], int err[2]) {
  setpgid(0, 0); /* so a timeout kills ssh and anything it started */
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0)
    dup2(null, 0);
  dup2(out[1], 1);
  dup2(err[1], 2);
  execvp(argv[0], argv);
  fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

static int start(struct dcc_job *j, struct proc *p) {
  const char *env = getenv("DISTCOMM_SSH");
  char words[1024], *argv[MAX_ARGS];
  snprintf(words, sizeof words, "%s", env && *env ? env : "ssh");
  int out[2], err[2];
  if (build_argv(words, j->host, j->script, argv) != 0 ||
      pipe2(out, O_CLOEXEC) != 0)
    return -1;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return -1;
  }
  log_command(j->host, argv);
  p->pid = fork();
  if (p->pid == 0)
    child(argv, out, err);
  close(out[1]);
  close(err[1]);
  if (p->pid < 0) {
    close(out[0]);
    close(err[0]);
    return -1;
  }
  p->fd[0] = out[0];
  p->fd[1] = err[0];
  return 0;
}

/* Appends what fd k of p has; closes it at EOF or error. */
static void drain(struct dcc_job *j, struct proc *p, int k) {
  char buf[4096];
  ssize_t r = read(p->fd[k], buf, sizeof buf);
  if (r < 0 && errno == EINTR)
    return;
  if (r <= 0) {
    close(p->fd[k]);
    p->fd[k] = -1;
    return;
  }
  if (k == 0 && p->outlen + (size_t)r < MAX_OUT) {
    char *o = realloc(j->out, p->outlen + (size_t)r + 1);
    if (o == NULL)
      return;
    memcpy(o + p->outlen, buf, (size_t)r);
    p->outlen += (size_t)r;
    o[p->outlen] = '\0';
    j->out = o;
  } else if (k == 1) { /* keep the end: the error is usually last */
    size_t keep = sizeof j->err - 1;
    size_t cur = strlen(j->err), add = (size_t)r > keep ? keep : (size_t)r;
    if (cur + add > keep) {
      memmove(j->err, j->err + (cur + add - keep), keep - add);
      cur = keep - add;
    }
    memcpy(j->err + cur, buf + r - add, add);
    j->err[cur + add] = '\0';
  }
}

/* Reads every open pipe until all are closed or the deadline passes. */
static void pump(struct dcc_job *jobs, struct proc *ps, int n, int64_t deadline,
                 struct progress *pr) {
  for (;;) {
    struct pollfd pfd[2 * DCC_MAX_HOSTS];
    int who[2 * DCC_MAX_HOSTS], m = 0;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < 2; k++)
        if (ps[i].fd[k] >= 0) {
          pfd[m] = (struct pollfd){.fd = ps[i].fd[k], .events = POLLIN};
          who[m++] = i * 2 + k;
        }
    int64_t left = deadline - now_ms();
    if (m == 0 || left <= 0)
      return;
    if (poll(pfd, (nfds_t)m, (int)left) < 0 && errno != EINTR)
      return;
    for (int x = 0; x < m; x++)
      if (pfd[x].revents) {
        drain(&jobs[who[x] / 2], &ps[who[x] / 2], who[x] % 2);
        tell(pr, &jobs[who[x] / 2], &ps[who[x] / 2]);
      }
  }
}

/* Waits for p until the deadline, then kills its process group. */
static void reap(struct dcc_job *j, struct proc *p, int64_t deadline) {
  int st;
  pid_t r;
  while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && now_ms() < deadline)
    usleep(10000);
  if (r == 0) {
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &st, 0);
    j->timed_out = true;
  }
  j->status = r > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  for (int k = 0; k < 2; k++)
    if (p->fd[k] >= 0)
      close(p->fd[k]);
}

int dcc_ssh_all(struct dcc_job *jobs, int n, int timeout_s, const char *step) {
  struct proc ps[DCC_MAX_HOSTS];
  struct progress pr = {.step = isatty(STDERR_FILENO) ? step : NULL};
  int64_t deadline = now_ms() + (int64_t)timeout_s * 1000;
  int failed = 0;
  for (int i = 0; i < n; i++) {
    jobs[i] = (struct dcc_job){
        .host = jobs[i].host, .script = jobs[i].script, .status = -1};
    ps[i] = (struct proc){.pid = -1, .fd = {-1, -1}};
    if (jobs[i].script && start(&jobs[i], &ps[i]) != 0)
      snprintf(jobs[i].err, sizeof jobs[i].err, "cannot start ssh: %s",
               strerror(errno));
    pr.n += ps[i].pid > 0;
  }
  pump(jobs, ps, n, deadline, &pr);
  for (int i = 0; i < n; i++) {
    if (ps[i].pid > 0)
      reap(&jobs[i], &ps[i], deadline);
    failed += jobs[i].script && jobs[i].status != 0;
  }
  return failed;
}

void dcc_jobs_free(struct dcc_job *jobs, int n) {
  for (int i = 0; i < n; i++) {
    free(jobs[i].out);
    jobs[i].out = NULL;
  }
}

/* stderr on one line: line breaks become "; ", trailing ones go. */
static void one_line(const char *in, char *out, size_t len) {
  size_t n = 0;
  for (; *in && n + 3 < len; in++)
    if (*in != '\r' && *in != '\n') {
      out[n++] = *in;
    } else if (n > 0 && in[1] != '\0' && in[1] != '\r' && in[1] != '\n') {
      out[n++] = ';';
      out[n++] = ' ';
    }
  out[n] = '\0';
}

const char *dcc_job_why(const struct dcc_job *j, char *buf, size_t len) {
  char err[sizeof j->err];
  one_line(j->err, err, sizeof err);
  if (j->timed_out)
    snprintf(buf, len, "no answer in time%s%s", *err ? ": " : "", err);
  else
    snprintf(buf, len, "exit status %d%s%s", j->status, *err ? ": " : "", err);
  return buf;
}
