#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define PICK_ATTEMPTS 200
/* Below PICK_LOW: well-known and commonly configured services. */
#define PICK_LOW 10000

/* Binds a TCP socket to 127.0.0.1:port. reuse=true ignores TIME_WAIT leftovers
 * (fine for a port the user chose); reuse=false also avoids ports that are
 * still settling, which is what we want when we choose. */
static int bind_port(int port, bool reuse) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  if (reuse)
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* Binds base..base+count-1; on the first failure closes what it bound.
 * Returns the index that failed, or -1 when all are bound. */
static long bind_block(struct dcl_ports *p, long base, bool reuse) {
  for (size_t i = 0; i < p->count; i++) {
    p->ports[i] = (int)(base + (long)i);
    p->fds[i] = bind_port(p->ports[i], reuse);
    if (p->fds[i] < 0) {
      int e = errno;
      for (size_t j = 0; j < i; j++) {
        close(p->fds[j]);
        p->fds[j] = -1;
      }
      errno = e;
      return (long)i;
    }
  }
  return -1;
}

/* The kernel hands out ports from ip_local_port_range to outgoing connections
 * (the ranks' own connects included); picking below it avoids racing them. */
static long ephemeral_low(void) {
  long low = 32768, high = 60999;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != NULL) {
    if (fscanf(f, "%ld %ld", &low, &high) != 2)
      low = 32768;
    fclose(f);
  }
  return low;
}

static int pick_block(struct dcl_ports *p) {
  long lo = PICK_LOW, hi = ephemeral_low(); /* choose in [lo, hi) */
  if (hi - lo < (long)p->count * 4) {       /* odd configuration: use it all */
    lo = 1024;
    hi = 65536;
  }
  long span = hi - lo - (long)p->count + 1;
  for (int attempt = 0; attempt < PICK_ATTEMPTS; attempt++) {
    uint32_t r = 0;
    if (dcl_random(&r, sizeof r) != 0)
      r = (uint32_t)getpid() * 2654435761u + (uint32_t)attempt;
    long base = lo + (long)(r % (uint32_t)span);
    if (bind_block(p, base, false) < 0)
      return 0;
  }
  dcl_error(
      "could not find %zu free consecutive ports on 127.0.0.1 after %d tries",
      p->count, PICK_ATTEMPTS);
  return -1;
}

int dcl_reserve_ports(long starting_port, size_t count, struct dcl_ports *p) {
  p->count = count;
  p->ports = calloc(count, sizeof *p->ports);
  p->fds = calloc(count, sizeof *p->fds);
  if (p->ports == NULL || p->fds == NULL) {
    dcl_error("out of memory");
    return -1;
  }
  for (size_t i = 0; i < count; i++)
    p->fds[i] = -1; /* calloc's 0 is stdin, never close that by mistake */
  if (starting_port == 0)
    return pick_block(p);
  long bad = bind_block(p, starting_port, true);
  if (bad < 0)
    return 0;
  dcl_error("port %ld on 127.0.0.1 is not available (%s); choose another "
            "--starting-port or leave it out to pick free ports",
            starting_port + bad, strerror(errno));
  return -1;
}

void dcl_share_ports(struct dcl_ports *p) {
  int one = 1;
  for (size_t i = 0; i < p->count; i++)
    if (p->fds[i] >= 0)
      (void)setsockopt(p->fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
}

void dcl_release_ports(struct dcl_ports *p) {
  for (size_t i = 0; i < p->count; i++) {
    if (p->fds[i] >= 0)
      close(p->fds[i]);
    p->fds[i] = -1;
  }
}

void dcl_ports_free(struct dcl_ports *p) {
  if (p->fds != NULL)
    dcl_release_ports(p);
  free(p->ports);
  free(p->fds);
  memset(p, 0, sizeof *p);
}
