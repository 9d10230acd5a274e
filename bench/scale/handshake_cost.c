/* handshake_cost.c - what a bare connection costs on this host: N times,
 * connect, accept, an 84-byte hello each way, close, between two
 * processes, over TCP on 127.0.0.1 (TCP_NODELAY, as distcomm's sockets)
 * or over an abstract Unix socket. Prints the CPU of both processes per
 * connection: the floor under set-up's ~200 us per pair at 256 ranks
 * (bench/scale/many-ranks.md, session 11).
 *
 *   cc -O2 -o /tmp/hc bench/scale/handshake_cost.c && /tmp/hc tcp 20000 &&
 * /tmp/hc unix 20000
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int unix_mode;
static struct sockaddr_storage where;
static socklen_t where_len;

static int make(void) {
  int fd = socket(unix_mode ? AF_UNIX : AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd >= 0 && !unix_mode)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static double cpu(int who) {
  struct rusage u;
  getrusage(who, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
         ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e-6;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int exchange(int fd, int first) {
  char b[84] = {1};
  if (first)
    return write(fd, b, sizeof b) == (ssize_t)sizeof b &&
           read(fd, b, sizeof b) > 0;
  return read(fd, b, sizeof b) > 0 && write(fd, b, sizeof b) > 0;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "tcp") && strcmp(argv[1], "unix"))) {
    fprintf(stderr, "usage: %s tcp|unix N\n", argv[0]);
    return 2;
  }
  unix_mode = strcmp(argv[1], "unix") == 0;
  int n = atoi(argv[2]), one = 1;
  if (unix_mode) {
    struct sockaddr_un *u = (struct sockaddr_un *)&where;
    u->sun_family = AF_UNIX;
    int k = snprintf(u->sun_path + 1, sizeof u->sun_path - 1, "hc-%d",
                     (int)getpid());
    where_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + k);
  } else {
    struct sockaddr_in *i = (struct sockaddr_in *)&where;
    i->sin_family = AF_INET;
    i->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    where_len = sizeof *i;
  }
  int l = make();
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(l, (struct sockaddr *)&where, where_len) || listen(l, 1024) ||
      getsockname(l, (struct sockaddr *)&where, &where_len)) {
    perror("listen");
    return 1;
  }
  double t0 = now();
  pid_t child = fork();
  if (child == 0) {
    close(l);
    for (int i = 0; i < n; i++) {
      int fd = make();
      if (connect(fd, (struct sockaddr *)&where, where_len) ||
          !exchange(fd, 1)) {
        perror("connect");
        _exit(1);
      }
      close(fd);
    }
    _exit(0);
  }
  for (int i = 0; i < n; i++) {
    int fd = accept(l, NULL, NULL);
    if (!unix_mode)
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    exchange(fd, 0);
    close(fd);
  }
  int st = 0;
  waitpid(child, &st, 0);
  double c = cpu(RUSAGE_SELF) + cpu(RUSAGE_CHILDREN);
  printf("%s: %d connections, CPU %.2f s (%.1f us each, both ends), wall "
         "%.2f s\n",
         argv[1], n, c, c / n * 1e6, now() - t0);
  return st != 0;
}
