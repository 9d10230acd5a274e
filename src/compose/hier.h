/* Hierarchical all_reduce for several ranks on each of several hosts
 * (NCCL's rings per rail): a reduce_scatter inside the host, where the
 * ranks share memory; an all_reduce of this rank's block across hosts
 * among the ranks of the same local index (rail i: local rank i of every
 * host), so each of a host's ranks carries 1/L of the host's traffic on
 * its own connections; then an all_gather inside the host. Every byte
 * crosses between hosts once each way on a ring of hosts, as few times
 * as it can.
 *
 * It is written against two groups the backend split off (it knows no
 * transport) and calls their public collectives, which choose their own
 * algorithms (single copy or pipes inside the host, ring or direct
 * across). The rail group gets a progress thread (its requests). */
#ifndef DC_COMPOSE_HIER_H
#define DC_COMPOSE_HIER_H

#include <stddef.h>

#include "distcomm.h"

typedef struct dc_hier {
  dc_group *local; /* this host's ranks, in the parent's rank order */
  dc_group *rail;  /* the ranks of this local index, one per host */
} dc_hier;

/* Every rank of the parent calls it with the same count, dtype and op
 * (send == recv allowed). Large buffers go in pieces: the rail's
 * all_reduce of one piece (a request on the rail's progress thread)
 * overlaps the work inside the host on the pieces beside it. A count that
 * the local size L does not divide leaves a tail of count % L elements:
 * all-reduced inside the host, then on the rail. Every rank ends with the
 * same bits. On failure *failed is the subgroup that failed and why its
 * detail; no request is left in flight. */
dc_status dc_hier_all_reduce(const dc_hier *h, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_op op,
                             dc_group **failed, char *why, size_t whylen);

#endif
