/* What distcomm-config writes: MLX's hostfiles (ethernet, ring over direct
 * links, mesh) and the Graphviz picture of the hosts and links. */
#ifndef DCC_EMIT_H
#define DCC_EMIT_H

#include <stdio.h>

#include "config.h"

/* The variable that makes the ring backend connect each rank to its two
 * neighbours only (rank r's i-th address is its end of the i-th link
 * from rank r-1), as a ring of direct links needs. */
#define DCC_NEIGHBOURS_ENV "DISTCOMM_RING_NEIGHBOURS=1"

/* The address the other hosts reach h at over ethernet: the one ssh used,
 * unless that is loopback and other hosts exist (then h's first IPv4 on an
 * up, non-loopback interface). 0 when none. */
uint32_t dcc_ethernet_addr(const struct dcc_host *h, int nhosts);

/* [{"ssh", "ips": [ethernet address]}, ...] in host order. */
void dcc_emit_ethernet(FILE *f, const struct dcc_topo *t);

/* {"backend": "ring", "envs": [neighbours], "hosts": [...]} in ring order;
 * each host's "ips" are its ends of the links from the previous host, one
 * per parallel ring. */
void dcc_emit_ring(FILE *f, const struct dcc_topo *t, const int order[],
                   int rings);

/* MLX's mesh (JACCL) shape, in host order: "ips" = ethernet address (the
 * coordinator's is the first host's), "rdma"[j] = the interface of the
 * link to host j, null on the diagonal. */
void dcc_emit_mesh(FILE *f, const struct dcc_topo *t);

/* graph { hosts as boxes; one edge per link labelled "ifA — ifB" and the
 * addresses when known }. */
void dcc_emit_dot(FILE *f, const struct dcc_topo *t);

#endif
