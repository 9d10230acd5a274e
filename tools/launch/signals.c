#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int g_pipe[2] = {-1, -1};
static volatile sig_atomic_t g_first_stop_signal;
static volatile sig_atomic_t g_stop_count;

static const int HANDLED[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
#define N_HANDLED (sizeof HANDLED / sizeof HANDLED[0])

static void on_signal(int sig) {
  int saved = errno; /* the interrupted code may be about to read errno */
  if (sig != SIGCHLD) {
    if (g_first_stop_signal == 0)
      g_first_stop_signal = sig;
    g_stop_count++;
  }
  char b = (char)sig;
  ssize_t ignored = write(g_pipe[1], &b, 1); /* full pipe: already woken */
  (void)ignored;
  errno = saved;
}

int dcl_signals_install(void) {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (size_t i = 0; i < N_HANDLED; i++)
    if (sigaction(HANDLED[i], &sa, NULL) != 0)
      return -1;
  sa.sa_handler = SIG_IGN;
  sa.sa_flags = 0;
  return sigaction(SIGPIPE, &sa, NULL);
}

int dcl_signals_fd(void) { return g_pipe[0]; }

int dcl_signals_drain(int *count) {
  char buf[64];
  while (read(g_pipe[0], buf, sizeof buf) > 0)
    ;
  *count = g_stop_count;
  return g_first_stop_signal;
}

void dcl_signals_reset_in_child(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < N_HANDLED; i++)
    (void)sigaction(HANDLED[i], &sa, NULL);
  (void)sigaction(SIGPIPE, &sa, NULL); /* ignored dispositions survive exec */
  sigset_t none;
  sigemptyset(&none);
  (void)sigprocmask(SIG_SETMASK, &none, NULL);
}
