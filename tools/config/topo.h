/* The topology checks: a ring through every host (for the ring backend,
 * with as many parallel rings as every neighbour pair has links), or a
 * full mesh (for mesh). When neither exists, the missing links. */
#ifndef DCC_TOPO_H
#define DCC_TOPO_H

#include "config.h"

/* Number of links between hosts x and y. */
int dcc_links_between(const struct dcc_topo *t, int x, int y);

/* Index in t->links of the j-th link (in t->links order) between x and y, or
 * -1. */
int dcc_link_between(const struct dcc_topo *t, int x, int y, int j);

/* Looks for a ring through all t->nhosts hosts (n >= 2). On success fills
 * order[n] (starting at host 0), *rings (the number of link-disjoint rings
 * along that order, >= 1) and returns 0. Otherwise returns -1 and fills
 * missing[][2] / *nmissing with the fewest host pairs whose links would
 * close a ring. Returns -2 when out of memory. */
int dcc_ring_find(const struct dcc_topo *t, int order[], int *rings,
                  int missing[][2], int *nmissing);

/* Fills missing[][2] with every host pair that has no link; returns the count.
 */
int dcc_mesh_missing(const struct dcc_topo *t, int missing[][2]);

#endif
