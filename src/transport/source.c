/* Which pairs connect over a Unix socket (dc_plan_local), and without a job
 * token who may claim a rank (dc_plan_source_ok): see mesh.h. */
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/mesh.h"
#include "transport/sock.h"

/* a and b in the subnet of mask (same family as a). */
static int same_net(const struct sockaddr *a, const struct sockaddr *b,
                    const struct sockaddr *mask) {
  if (!mask || a->sa_family != b->sa_family || a->sa_family != mask->sa_family)
    return 0;
  const unsigned char *x, *y, *m;
  size_t n;
  if (a->sa_family == AF_INET) {
    x = (const void *)&((const struct sockaddr_in *)(const void *)a)->sin_addr;
    y = (const void *)&((const struct sockaddr_in *)(const void *)b)->sin_addr;
    m = (const void *)&((const struct sockaddr_in *)(const void *)mask)
            ->sin_addr;
    n = 4;
  } else {
    x = (const void *)&((const struct sockaddr_in6 *)(const void *)a)
            ->sin6_addr;
    y = (const void *)&((const struct sockaddr_in6 *)(const void *)b)
            ->sin6_addr;
    m = (const void *)&((const struct sockaddr_in6 *)(const void *)mask)
            ->sin6_addr;
    n = 16;
  }
  for (size_t i = 0; i < n; i++)
    if ((x[i] & m[i]) != (y[i] & m[i]))
      return 0;
  return 1;
}

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

/* From this host (any of its addresses), or, on a ring of cables, from the
 * other end of the link the connection came in on (same subnet as our end;
 * not on a shared network, where that subnet holds strangers too). */
static int near(const struct sockaddr *peer, const struct sockaddr *local,
                int cables) {
  if (is_loopback(peer))
    return 1;
  struct ifaddrs *all = NULL;
  if (getifaddrs(&all) != 0)
    return 0;
  int yes = 0;
  for (const struct ifaddrs *i = all; i && !yes; i = i->ifa_next) {
    if (!i->ifa_addr)
      continue;
    yes = dc_sock_same_ip(i->ifa_addr, peer) ||
          (cables && dc_sock_same_ip(i->ifa_addr, local) &&
           same_net(peer, local, i->ifa_netmask));
  }
  freeifaddrs(all);
  return yes;
}

int dc_plan_local(const dc_engine_plan *p, int q, int lane) {
  if (!p->twin_fds || p->per_peer)
    return 0;
  const dc_addr *mine = &p->addrs[p->rank * p->naddrs + lane % p->naddrs];
  return dc_sock_same_ip(&mine->sa, &dc_plan_addr(p, q, lane)->sa);
}

int dc_plan_source_ok(const dc_engine_plan *p, int q, int fd) {
  struct sockaddr_storage peer, local;
  socklen_t pl = sizeof peer, ll = sizeof local;
  if (getsockname(fd, (struct sockaddr *)&local, &ll) != 0)
    return 0;
  if (local.ss_family == AF_UNIX)
    return dc_sock_peer_pid(fd) > 0;
  if (getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
    return 0;
  for (int l = 0; l < p->naddrs; l++)
    if (dc_sock_same_ip((const struct sockaddr *)&dc_plan_addr(p, q, l)->sa,
                        (const struct sockaddr *)&peer))
      return 1;
  return near((const struct sockaddr *)&peer, (const struct sockaddr *)&local,
              dc_plan_neighbours_only(p) && !p->per_peer);
}
