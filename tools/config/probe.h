/* Which host each direct link reaches: every host pings the all-nodes
 * multicast address (ff02::1) out of each candidate interface, and the
 * IPv6 link-local addresses that answer are matched to the interfaces
 * every host reported. A link counts when both ends saw each other. */
#ifndef DCC_PROBE_H
#define DCC_PROBE_H

#include <stddef.h>

#include "config.h"

#define DCC_MAX_SIGHTS 256

/* Interface ifc of the probing host heard link-local address addr. */
struct dcc_sight {
  int ifc;
  uint8_t addr[16];
};

struct dcc_seen {
  struct dcc_sight s[DCC_MAX_SIGHTS];
  int n;
};

/* Whether interface i of h may be a direct link: up, not loopback, not the
 * management interface, with a link-local address and a plain name. */
bool dcc_probe_candidate(const struct dcc_host *h, int i);

/* The remote command that probes every candidate interface of h at once
 * (malloc'd), or NULL when h has none. */
char *dcc_probe_script(const struct dcc_host *h);

/* Reads the probe script's output ("<ifname> <ping line>" lines). */
void dcc_probe_parse(const char *out, const struct dcc_host *h,
                     struct dcc_seen *seen);

/* Fills t->links from every host's sightings (seen[t->nhosts]), sorted by
 * host pair then interface name. Returns the number of links. */
int dcc_links_build(struct dcc_topo *t, const struct dcc_seen *seen);

#endif
