/* tcp_floor.c - what the kernel's TCP gives without any library, on the
 * paths `bench/peers/compare tcp` and `bench/hosts/hosts.sh` measure: the floor
 * under their latency cells and the ceiling over their bandwidth cells.
 *
 *   bench-tcp-floor pingpong [ITERS]
 *       two processes on 127.0.0.1 (TCP_NODELAY), 8 B each way ITERS times:
 *       one-way time, once with blocking reads and once spinning on
 *       non-blocking ones (as distcomm and Open MPI do while they wait).
 *   bench-tcp-floor ring RANK ADDR,ADDR,... PORT BYTES [ROUNDS] [SOCKETS]
 *       one process per host: each sends BYTES (suffixes K, M) to the next
 *       address and receives as much from the previous one at the same
 *       time, over SOCKETS connections (default 2, as DISTCOMM_SOCKETS),
 *       a thread per direction and socket, no other work. Rank 0 prints
 *       each round's rate per rank: a ring collective whose ranks send
 *       BYTES each cannot pass it (all_sum of S on n ranks sends
 *       2(n-1)/n * S; its busbw is that over the time).
 *
 * Build: with the project (bench-tcp-floor) or cc -O2 -pthread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_ADDRS = 64, MAX_SOCKETS = 16, CHUNK = 1 << 20 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static struct sockaddr_in addr_of(const char *ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    fprintf(stderr, "not an IPv4 address: %s\n", ip);
    exit(2);
  }
  return a;
}

static int listen_on(struct sockaddr_in a) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0)
    die("socket");
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64))
    die("bind/listen");
  return fd;
}

/* Dials until the peer listens (the hosts start in any order), for 30 s. */
static int dial(struct sockaddr_in a) {
  for (double end = now() + 30; now() < end; usleep(10000)) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0)
      die("socket");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
      return fd;
    close(fd);
  }
  fprintf(stderr, "cannot connect to %s:%d in 30 s\n", inet_ntoa(a.sin_addr),
          ntohs(a.sin_port));
  exit(1);
}

static void full(int fd, char *p, size_t n, int sending) {
  while (n) {
    ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR)
        continue;
      die(sending ? "send" : "recv (peer gone?)");
    }
    p += k;
    n -= (size_t)k;
  }
}

/* pingpong ------------------------------------------------------------- */

static void bounce(int fd, char *b, int first, int spin) {
  if (first)
    full(fd, b, 8, 1);
  for (size_t got = 0; got < 8;) {
    ssize_t k = recv(fd, b + got, 8 - got, spin ? MSG_DONTWAIT : 0);
    if (k > 0)
      got += (size_t)k;
    else if (k == 0 || (errno != EAGAIN && errno != EINTR))
      die("recv");
  }
  if (!first)
    full(fd, b, 8, 1);
}

static double pingpong(int iters, int spin) {
  int l = listen_on(addr_of("127.0.0.1", 0)), one = 1;
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  getsockname(l, (struct sockaddr *)&a, &len);
  pid_t child = fork();
  if (child == 0) {
    int fd = dial(a);
    char b[8] = {0};
    for (int i = 0; i < iters + iters / 10; i++)
      bounce(fd, b, 0, spin);
    _exit(0);
  }
  int fd = accept(l, NULL, NULL);
  if (fd < 0)
    die("accept");
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char b[8] = {0};
  for (int i = 0; i < iters / 10; i++) /* warm up */
    bounce(fd, b, 1, spin);
  double t = now();
  for (int i = 0; i < iters; i++)
    bounce(fd, b, 1, spin);
  t = now() - t;
  waitpid(child, NULL, 0);
  close(fd);
  close(l);
  return t / iters / 2 * 1e6;
}

/* ring ------------------------------------------------------------------ */

struct stream {
  int fd, sending;
  size_t bytes;
  char *buf;
};

static void *run_stream(void *arg) {
  struct stream *s = arg;
  for (size_t left = s->bytes; left;) {
    size_t n = left < CHUNK ? left : CHUNK;
    full(s->fd, s->buf, n, s->sending);
    left -= n;
  }
  return NULL;
}

static int ring(int rank, char *list, int port, size_t bytes, int rounds,
                int socks) {
  char *ips[MAX_ADDRS];
  int n = 0;
  for (char *t = strtok(list, ","); t && n < MAX_ADDRS; t = strtok(NULL, ","))
    ips[n++] = t;
  if (rank < 0 || rank >= n || socks < 1 || socks > MAX_SOCKETS) {
    fprintf(stderr, "rank %d of %d addresses, %d sockets: out of range\n", rank,
            n, socks);
    return 2;
  }
  int l = listen_on(addr_of(ips[rank], port));
  int out[MAX_SOCKETS], in[MAX_SOCKETS];
  for (int k = 0; k < socks; k++) {
    out[k] = dial(addr_of(ips[(rank + 1) % n], port));
    in[k] = accept(l, NULL, NULL);
    if (in[k] < 0)
      die("accept");
  }
  size_t share = bytes / (size_t)socks;
  char *buf = malloc((size_t)CHUNK * 2 * (size_t)socks);
  if (!buf)
    die("malloc");
  memset(buf, 1, (size_t)CHUNK * 2 * (size_t)socks);
  for (int r = 0; r < rounds; r++) {
    char token = 0; /* a token round the ring starts every round together */
    if (rank == 0)
      full(out[0], &token, 1, 1);
    full(in[0], &token, 1, 0);
    if (rank != 0)
      full(out[0], &token, 1, 1);
    pthread_t th[2 * MAX_SOCKETS];
    struct stream st[2 * MAX_SOCKETS];
    double t = now();
    for (int k = 0; k < 2 * socks; k++) {
      st[k] = (struct stream){k % 2 ? in[k / 2] : out[k / 2], !(k % 2), share,
                              buf + (size_t)k * CHUNK};
      pthread_create(&th[k], NULL, run_stream, &st[k]);
    }
    for (int k = 0; k < 2 * socks; k++)
      pthread_join(th[k], NULL);
    t = now() - t;
    if (rank == 0)
      printf("ring of %d, %zu bytes each way, %d socket(s): %.3f s, %.3f GB/s "
             "per rank\n",
             n, share * (size_t)socks, socks, t,
             (double)(share * (size_t)socks) / t * 1e-9);
    fflush(stdout);
  }
  free(buf);
  return 0;
}

/* 24M, 1536K or 1048576 */
static size_t bytes_of(const char *s) {
  char *end;
  double v = strtod(s, &end);
  v *= *end == 'K'   ? 1 << 10
       : *end == 'M' ? 1 << 20
       : *end == 'G' ? 1 << 30
                     : 1;
  return (size_t)v;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "pingpong")) {
    int iters = argc > 2 ? atoi(argv[2]) : 20000;
    printf("tcp 127.0.0.1 8 B one way: blocking %.2f us, spinning %.2f us\n",
           pingpong(iters, 0), pingpong(iters, 1));
    return 0;
  }
  if (argc >= 6 && !strcmp(argv[1], "ring"))
    return ring(atoi(argv[2]), argv[3], atoi(argv[4]), bytes_of(argv[5]),
                argc > 6 ? atoi(argv[6]) : 3, argc > 7 ? atoi(argv[7]) : 2);
  fprintf(stderr,
          "usage: %s pingpong [ITERS] | ring RANK ADDR,ADDR,... PORT BYTES "
          "[ROUNDS] [SOCKETS]\n",
          argv[0]);
  return 2;
}
