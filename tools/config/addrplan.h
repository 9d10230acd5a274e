/* IPv4 addresses on the direct links: a link whose two ends already share
 * a subnet keeps its addresses; every other link gets a /30 of its own,
 * 192.168.<k>.1 and .2 with the lowest k whose 192.168.k.0/24 overlaps no
 * network already on any host (so a second run finds and keeps them). */
#ifndef DCC_ADDRPLAN_H
#define DCC_ADDRPLAN_H

#include <stddef.h>

#include "config.h"

/* Whether the networks of x and y overlap. */
bool dcc_subnets_overlap(struct dcc_v4 x, struct dcc_v4 y);

/* Takes the existing addresses of every link (existing_only) or also plans
 * new ones. Returns the number of links planned, or -1 when no free
 * 192.168.k.0/30 is left. */
int dcc_plan_addresses(struct dcc_topo *t, bool existing_only);

/* The `ip addr add` lines (one per planned link end on host h, each ending
 * in '\n', each starting with `prefix`) into buf. Returns the count. */
int dcc_setup_lines(const struct dcc_topo *t, int h, const char *prefix,
                    char *buf, size_t len);

#endif
