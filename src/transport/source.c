/* Which pairs connect over a Unix socket (dc_plan_local), and without a job
 * token who may claim a rank (dc_plan_source_ok, protected mode): see
 * mesh.h. */
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "config/env.h"
#include "transport/mesh.h"
#include "transport/sock.h"

static int is_loopback(const struct sockaddr *a) {
  if (a->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)(const void *)a)
                      ->sin_addr.s_addr) >>
            24) == 127;
  if (a->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(
        &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr);
  return 0;
}

/* An address of this host (and network namespace), given its interfaces
 * list (NULL when getifaddrs failed: only loopback is known to be ours). */
static int ours_in(const struct ifaddrs *all, const struct sockaddr *a) {
  if (is_loopback(a))
    return 1;
  for (const struct ifaddrs *i = all; i; i = i->ifa_next)
    if (i->ifa_addr && dc_sock_same_ip(i->ifa_addr, a))
      return 1;
  return 0;
}

static struct ifaddrs *interfaces(void) {
  struct ifaddrs *all = NULL;
  return getifaddrs(&all) == 0 ? all : NULL;
}

static int ours(const struct sockaddr *a) {
  if (is_loopback(a))
    return 1; /* no need to ask the kernel */
  struct ifaddrs *all = interfaces();
  int yes = ours_in(all, a);
  if (all)
    freeifaddrs(all);
  return yes;
}

/* One end of a TCP connection as inet_diag names it; a v4-mapped IPv6
 * address as the IPv4 one (a dual-stack listener's view of a v4 peer). */
static int diag_end(const struct sockaddr_storage *s, __be16 *port,
                    __be32 addr[4]) {
  if (s->ss_family == AF_INET) {
    const struct sockaddr_in *v4 = (const void *)s;
    *port = v4->sin_port;
    addr[0] = v4->sin_addr.s_addr;
    return AF_INET;
  }
  const struct sockaddr_in6 *v6 = (const void *)s;
  *port = v6->sin6_port;
  if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
    memcpy(addr, v6->sin6_addr.s6_addr + 12, 4);
    return AF_INET;
  }
  memcpy(addr, &v6->sin6_addr, 16);
  return AF_INET6;
}

/* Ask the kernel (NETLINK_SOCK_DIAG) for the socket whose local end is
 * peer and remote end is local: the other end of our connection, when it
 * is on this host. Its owner's uid, or -1 when there is none here. */
static long diag_uid(const struct sockaddr_storage *peer,
                     const struct sockaddr_storage *local) {
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } req = {.h = {.nlmsg_len = sizeof req,
                 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                 .nlmsg_flags = NLM_F_REQUEST},
           .r = {.sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u}};
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  int fam = diag_end(peer, &req.r.id.idiag_sport, req.r.id.idiag_src);
  if (diag_end(local, &req.r.id.idiag_dport, req.r.id.idiag_dst) != fam)
    return -1;
  req.r.sdiag_family = (__u8)fam;
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0)
    return -1;
  struct timeval tv = {.tv_sec = 1}; /* the kernel answers at once */
  setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  long uid = -1;
  union {
    struct nlmsghdr h;
    char b[1024];
  } ans;
  ssize_t n = -1;
  if (send(nl, &req, sizeof req, 0) == (ssize_t)sizeof req)
    n = recv(nl, &ans, sizeof ans, 0);
  if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
      ans.h.nlmsg_type == SOCK_DIAG_BY_FAMILY)
    uid = ((const struct inet_diag_msg *)NLMSG_DATA(&ans.h))->idiag_uid;
  close(nl);
  return uid;
}

int dc_sock_peer_is_us(int fd) {
  struct sockaddr_storage peer, local;
  socklen_t pl = sizeof peer, ll = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &ll) != 0)
    return 0;
  if (local.ss_family == AF_UNIX)
    return dc_sock_peer_pid(fd) > 0;
  if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 ||
      (peer.ss_family != AF_INET && peer.ss_family != AF_INET6) ||
      !ours((const struct sockaddr *)&peer))
    return 0;
  return diag_uid(&peer, &local) == (long)geteuid();
}

int dc_plan_local(const dc_engine_plan *p, int q, int lane) {
  if (!p->twin_fds || p->per_peer)
    return 0;
  const dc_addr *mine = &p->addrs[p->rank * p->naddrs + lane % p->naddrs];
  return dc_sock_same_ip(&mine->sa, &dc_plan_addr(p, q, lane)->sa);
}

int dc_plan_source_ok(const dc_engine_plan *p, int q, int fd) {
  (void)p;
  (void)q;
  return dc_env_flag(DC_ENV_INSECURE) == 1 || dc_sock_peer_is_us(fd);
}

int dc_addr_is_ours(const dc_addr *a) {
  return ours((const struct sockaddr *)&a->sa);
}

int dc_plan_one_host(const dc_engine_plan *p) {
  size_t n =
      (size_t)p->size * (size_t)p->naddrs * (p->per_peer ? (size_t)p->size : 1);
  struct ifaddrs *all = interfaces(); /* once, not per address */
  int yes = 1;
  for (size_t i = 0; i < n && yes; i++)
    yes = ours_in(all, (const struct sockaddr *)&p->addrs[i].sa);
  if (all)
    freeifaddrs(all);
  return yes;
}

static const char how_to_token[] =
    "start it with distcomm-launch (it makes a token, over ssh too), or set "
    "DISTCOMM_JOB_TOKEN_FILE (a mode-600 file on a shared home) or "
    "DISTCOMM_JOB_TOKEN (a scheduler's secret) on every rank; or set "
    "DISTCOMM_INSECURE=1 to let in anyone who reaches its addresses";

const char *dc_how_to_token(void) { return how_to_token; }

/* Rank 0 of a job that opted out says so once per process, verbose or
 * not: the user chose it, and should see what it means. */
static void note_insecure(int rank) {
  static int said;
  if (rank == 0 && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "[distcomm rank 0] DISTCOMM_INSECURE=1 and no job token: "
                    "anyone who reaches this job's addresses may join it\n");
}

dc_status dc_plan_protected(const dc_engine_plan *p, int token, char *err,
                            size_t errlen) {
  if (token)
    return DC_OK;
  if (dc_env_flag(DC_ENV_INSECURE) == 1) {
    note_insecure(p->rank);
    return DC_OK;
  }
  if (dc_plan_one_host(p))
    return DC_OK;
  snprintf(err, errlen,
           "the job's ranks span hosts and it has no job token (without "
           "one it lets in only this host's processes of this user): %s",
           how_to_token);
  return DC_ERR_CONFIG;
}
