/* TCP (and same-host Unix) sockets: listen, connect with bounded retries,
 * tuning, and exact reads/writes with a deadline (handshakes; the data path:
 * link_sock.c). */
#ifndef DC_TRANSPORT_SOCK_H
#define DC_TRANSPORT_SOCK_H

#include <stddef.h>
#include <sys/types.h>

#include "config/hostfile.h"
#include "distcomm.h"

/* Listen on a (port 0 picks one; the chosen address is written back).
 * DC_ERR_SYSTEM with "port 5000 on 127.0.0.1 is already in use" etc. */
dc_status dc_sock_listen(dc_addr *a, int *fd, char *err, size_t errlen);
/* The same, and *twin listens on a's Unix twin (dc_sock_unix_twin) from
 * before the TCP port does. On failure neither is left open. */
dc_status dc_sock_listen_twin(dc_addr *a, int *fd, int *twin, char *err,
                              size_t errlen);

/* Connect to a, retrying refused/unreachable attempts until deadline
 * (dc_now() seconds). DC_ERR_TIMEOUT when the deadline passes. */
dc_status dc_sock_connect(const dc_addr *a, double deadline, int *fd, char *err,
                          size_t errlen);
/* The same, trying twin (a Unix socket) before a at every attempt: a
 * twin nobody listens on (a relay or tunnel between us) costs a pair its
 * Unix socket, never its connection. The twin listens before the port, so
 * when a answers after twin did not, twin is tried once more (it may have
 * come up in between). *via_twin says which one took it. */
dc_status dc_sock_connect_via(const dc_addr *twin, const dc_addr *a,
                              double deadline, int *fd, int *via_twin,
                              char *err, size_t errlen);

/* Accept one connection before deadline. DC_ERR_TIMEOUT when none came.
 * Both give non-blocking sockets with TCP_NODELAY. */
dc_status dc_sock_accept(int lfd, double deadline, int *fd, char *peer,
                         size_t peerlen, char *err, size_t errlen);

/* Two sockaddrs (IPv4 or IPv6) name the same IP address; ports aside. */
int dc_sock_same_ip(const void *a, const void *b);

/* Keepalive probes, so that a silent dead host shows: only for peers on
 * other hosts (a same-host peer's death closes its sockets, and with 255
 * same-host peers the four calls per socket were a tenth of set-up). */
void dc_sock_keepalive(int fd);

/* Exact write/read of n bytes before deadline (fd is non-blocking).
 * DC_ERR_PEER_LOST on EOF/reset, DC_ERR_TIMEOUT at the deadline. */
dc_status dc_sock_write_all(int fd, const void *buf, size_t n, double deadline);
dc_status dc_sock_read_all(int fd, void *buf, size_t n, double deadline);

/* "ip:port" of a sockaddr, for messages ("unix:@name" for an abstract
 * Unix socket). */
void dc_sock_name(const void *sa, char *out, size_t n);

/* out = the abstract Unix address "@name" (at most max bytes of name). */
void dc_sock_abstract(const char *name, size_t max, dc_addr *out);
/* Same-host pairs connect over a Unix socket beside each TCP listener:
 * out gets the abstract address "@distcomm/<ip:port of tcp>". */
void dc_sock_unix_twin(const dc_addr *tcp, dc_addr *out);
/* The pid at the other end of a Unix socket, from the kernel; -1 unless
 * it runs as our user. */
pid_t dc_sock_peer_pid(int fd);
/* Whether the other end of fd (Unix or TCP) is a process of our user on
 * this host, as the kernel says: SO_PEERCRED, or for TCP the uid that
 * NETLINK_SOCK_DIAG gives the peer's socket (none is found when the peer
 * is on another host). In source.c. */
int dc_sock_peer_is_us(int fd);
/* Whether a is an address of this host (loopback or an interface's). */
int dc_addr_is_ours(const dc_addr *a);

#endif
