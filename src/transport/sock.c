/* TCP socket plumbing shared by the backends. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "transport/sock.h"

void dc_sock_name(const void *sa, char *out, size_t n) {
  const struct sockaddr *s = sa;
  char ip[INET6_ADDRSTRLEN] = "?";
  if (s->sa_family == AF_UNIX) { /* abstract: sun_path[0] is NUL */
    const struct sockaddr_un *u = sa;
    size_t len = strnlen(u->sun_path + 1, sizeof u->sun_path - 1);
    snprintf(out, n, "unix:@%.*s", (int)len, u->sun_path + 1); /* may cut */
  } else if (s->sa_family == AF_INET6) {
    const struct sockaddr_in6 *a6 = sa;
    inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
    snprintf(out, n, "[%s]:%u", ip, ntohs(a6->sin6_port));
  } else {
    const struct sockaddr_in *a4 = sa;
    inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
    snprintf(out, n, "%s:%u", ip, ntohs(a4->sin_port));
  }
}

int dc_sock_same_ip(const void *sa, const void *sb) {
  const struct sockaddr *a = sa, *b = sb;
  if (a->sa_family != b->sa_family)
    return 0;
  if (a->sa_family == AF_INET)
    return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)sb)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
                  &((const struct sockaddr_in6 *)sb)->sin6_addr, 16) == 0;
  return 0;
}

/* TCP_NODELAY: dc_sock_connect and dc_sock_accept give non-blocking
 * sockets tuned so (a Unix socket has no Nagle to turn off). */
static void tune(int fd, int family) {
  int one = 1;
  if (family != AF_UNIX)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* The name is the TCP address's own, so it is as unique on this host as
 * the port the rank holds while it listens there; abstract names live in
 * the network namespace, like the port. */
void dc_sock_abstract(const char *name, size_t max, dc_addr *out) {
  struct sockaddr_un *u = (struct sockaddr_un *)&out->sa;
  size_t room = sizeof u->sun_path - 1; /* sun_path[0] is NUL */
  size_t n = strnlen(name, max < room ? max : room);
  memset(out, 0, sizeof *out);
  u->sun_family = AF_UNIX;
  memcpy(u->sun_path + 1, name, n);
  out->salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
  dc_sock_name(&out->sa, out->text, sizeof out->text);
}

void dc_sock_unix_twin(const dc_addr *tcp, dc_addr *out) {
  char ip[64], name[80];
  dc_sock_name(&tcp->sa, ip, sizeof ip);
  snprintf(name, sizeof name, "distcomm/%s", ip);
  dc_sock_abstract(name, sizeof name, out);
}

static int peer_cred(int fd, struct ucred *cr) {
  socklen_t len = sizeof *cr;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len);
}

pid_t dc_sock_peer_pid(int fd) {
  struct ucred cr;
  return peer_cred(fd, &cr) == 0 && cr.uid == geteuid() ? cr.pid : -1;
}

void dc_sock_keepalive(int fd) {
  int one = 1, idle = 30, intvl = 5, cnt = 4; /* a dead host shows in ~50 s */
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

static dc_status listen_fail(const dc_addr *a, int *fd, char *err,
                             size_t errlen) {
  int e = errno;
  snprintf(err, errlen, "cannot listen on %s: %s%s", a->text, strerror(e),
           e == EADDRINUSE && a->sa.ss_family == AF_UNIX
               ? " (another process holds this name: distcomm binds it "
                 "beside the TCP port it names)"
           : e == EADDRINUSE    ? " (the port is already taken)"
           : e == EADDRNOTAVAIL ? " (the address is not on this host)"
                                : "");
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
  return DC_ERR_SYSTEM;
}

/* A socket bound to a (port 0: the kernel's pick, written back), not yet
 * listening. */
static dc_status bind_to(dc_addr *a, int *fd, char *err, size_t errlen) {
  *fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0)
    return listen_fail(a, fd, err, errlen);
  int one = 1; /* a restarted job may reuse a port still in TIME_WAIT */
  if (a->sa.ss_family != AF_UNIX)
    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(*fd, (struct sockaddr *)&a->sa, a->salen) != 0)
    return listen_fail(a, fd, err, errlen);
  socklen_t len = sizeof a->sa;
  getsockname(*fd, (struct sockaddr *)&a->sa, &len);
  dc_sock_name(&a->sa, a->text, sizeof a->text);
  return DC_OK;
}

static dc_status start_listening(const dc_addr *a, int *fd, char *err,
                                 size_t errlen) {
  if (listen(*fd, 1024) != 0)
    return listen_fail(a, fd, err, errlen);
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) | O_NONBLOCK);
  return DC_OK;
}

dc_status dc_sock_listen(dc_addr *a, int *fd, char *err, size_t errlen) {
  return dc_sock_listen_twin(a, fd, NULL, err, errlen);
}

/* The twin listens before the TCP port does: whoever reaches the port
 * finds the twin too, so a dialer that finds no twin there knows none will
 * come (dc_sock_connect_via). */
dc_status dc_sock_listen_twin(dc_addr *a, int *fd, int *twin, char *err,
                              size_t errlen) {
  dc_addr u;
  dc_status st = bind_to(a, fd, err, errlen);
  if (st != DC_OK || !twin)
    return st == DC_OK ? start_listening(a, fd, err, errlen) : st;
  dc_sock_unix_twin(a, &u);
  st = bind_to(&u, twin, err, errlen);
  if (st == DC_OK)
    st = start_listening(&u, twin, err, errlen);
  if (st == DC_OK)
    st = start_listening(a, fd, err, errlen);
  if (st != DC_OK) {
    if (*twin >= 0)
      close(*twin);
    if (*fd >= 0)
      close(*fd);
    *fd = *twin = -1;
  }
  return st;
}

static int wait_fd(int fd, short events, double deadline) {
  double left = deadline - dc_now();
  if (left <= 0)
    return 0;
  struct pollfd p = {.fd = fd, .events = events};
  int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
  int r = poll(&p, 1, ms);
  return r < 0 && errno != EINTR ? -1 : 1;
}

/* One non-blocking connect attempt: 1 connected, 0 retry, -1 fatal. */
static int try_connect(const dc_addr *a, double deadline, int *fd) {
  *fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (*fd < 0)
    return -1;
  int r = connect(*fd, (const struct sockaddr *)&a->sa, a->salen);
  if (r != 0 && errno == EINPROGRESS) {
    struct pollfd p = {.fd = *fd, .events = POLLOUT};
    double left = deadline - dc_now();
    poll(&p, 1, left > 1 ? 1000 : left > 0 ? (int)(left * 1000) + 1 : 0);
    int e = 0;
    socklen_t el = sizeof e;
    getsockopt(*fd, SOL_SOCKET, SO_ERROR, &e, &el);
    r = (p.revents & POLLOUT) && e == 0 ? 0 : -1;
  }
  if (r == 0)
    return 1;
  close(*fd);
  *fd = -1;
  return 0;
}

/* The port answered after the twin did not: the twin listens before the
 * port (dc_sock_listen_twin), so it may have come up between the two tries.
 * If it answers now, it replaces the TCP connection (the acceptor sees
 * that one close without a hello); 1 when it did. */
static int twin_since(const dc_addr *twin, double deadline, int *fd) {
  int u;
  if (try_connect(twin, deadline, &u) != 1)
    return 0;
  close(*fd);
  *fd = u;
  return 1;
}

dc_status dc_sock_connect(const dc_addr *a, double deadline, int *fd, char *err,
                          size_t errlen) {
  int via_twin;
  return dc_sock_connect_via(NULL, a, deadline, fd, &via_twin, err, errlen);
}

dc_status dc_sock_connect_via(const dc_addr *twin, const dc_addr *a,
                              double deadline, int *fd, int *via_twin,
                              char *err, size_t errlen) {
  double pause = 0.01;
  while (dc_now() < deadline) {
    int r = twin ? try_connect(twin, deadline, fd) : 0;
    *via_twin = r == 1;
    if (r == 1) /* nothing to tune on a Unix socket */
      return DC_OK;
    if (r == 0)
      r = try_connect(a, deadline, fd);
    if (r == 1) {
      *via_twin = twin && twin_since(twin, deadline, fd);
      if (!*via_twin)
        tune(*fd, a->sa.ss_family);
      return DC_OK;
    }
    if (r < 0) {
      snprintf(err, errlen, "socket: %s", strerror(errno));
      return DC_ERR_SYSTEM;
    }
    usleep((useconds_t)(pause * 1e6)); /* the peer may not listen yet */
    pause = pause < 0.2 ? pause * 2 : 0.2;
  }
  snprintf(err, errlen, "could not connect to %s before the timeout", a->text);
  return DC_ERR_TIMEOUT;
}

dc_status dc_sock_accept(int lfd, double deadline, int *fd, char *peer,
                         size_t peerlen, char *err, size_t errlen) {
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    *fd = accept4(lfd, (struct sockaddr *)&ss, &len,
                  SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (*fd >= 0) {
      struct ucred cr = {.pid = -1, .uid = (uid_t)-1};
      if (ss.ss_family == AF_UNIX && peer_cred(*fd, &cr) == 0)
        snprintf(peer, peerlen, "unix socket of pid %d uid %d", (int)cr.pid,
                 (int)cr.uid); /* its end has no name: say who */
      else if (ss.ss_family == AF_UNIX)
        snprintf(peer, peerlen, "unix socket");
      else
        dc_sock_name(&ss, peer, peerlen);
      tune(*fd, ss.ss_family);
      return DC_OK;
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
      snprintf(err, errlen, "accept: %s", strerror(errno));
      return DC_ERR_SYSTEM;
    }
    if (wait_fd(lfd, POLLIN, deadline) == 0) {
      snprintf(err, errlen, "no connection came before the timeout");
      return DC_ERR_TIMEOUT;
    }
  }
}

dc_status dc_sock_write_all(int fd, const void *buf, size_t n,
                            double deadline) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
      return DC_ERR_PEER_LOST;
    } else if (wait_fd(fd, POLLOUT, deadline) == 0) {
      return DC_ERR_TIMEOUT;
    }
  }
  return DC_OK;
}

dc_status dc_sock_read_all(int fd, void *buf, size_t n, double deadline) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      return DC_ERR_PEER_LOST;
    } else if (wait_fd(fd, POLLIN, deadline) == 0) {
      return DC_ERR_TIMEOUT;
    }
  }
  return DC_OK;
}
