/* Rendezvous through one coordinator address (src/bootstrap/coordinator.c).
 *
 * For jobs that a scheduler or a shell loop starts with no hostfile: every
 * process knows its rank, the world size and one address where rank 0
 * listens (MLX's MLX_JACCL_COORDINATOR, our DISTCOMM_COORDINATOR, torchrun's
 * MASTER_ADDR/MASTER_PORT). Each rank listens on ports the kernel picks,
 * sends its addresses to rank 0 (one message), and gets every rank's back
 * (one message): the result is the table a hostfile would have given, so
 * the transport sets up the same way after it.
 *
 * Rank 0 refuses the rendezvous, on every rank that joined, when two
 * processes claim one rank, when a rank announces another world size or
 * another number of addresses, or when a rank has not come by the timeout
 * (naming the missing ranks). A joiner whose coordinator dies learns it from
 * the closed connection at once. With a job token every JOIN and answer
 * carries a MAC under a key from it (the token itself is never sent), and
 * a JOIN without a good one is dropped; without a token only this host's
 * processes of this user may join (protected mode), unless
 * DISTCOMM_INSECURE=1. Conflicts from a JOIN so trusted fail the job (a
 * misconfigured rank); any other JOIN is only dropped and logged.
 *
 * Nothing here knows dc_group: errors come back as text. */
#ifndef DC_BOOTSTRAP_COORDINATOR_H
#define DC_BOOTSTRAP_COORDINATOR_H

#include <stddef.h>
#include <stdint.h>

#include "config/hostfile.h"

typedef struct dc_coord {
  dc_addr addr;     /* where rank 0 listens */
  const char *from; /* the variable(s) it came from, for messages */
  int rank, size;
} dc_coord;

/* The coordinator, rank and size from the environment (the order is in
 * coordinator.c and docs/multi-host.md). DC_ERR_UNAVAILABLE when no coordinator
 * address is set; DC_ERR_CONFIG naming the variable when one is malformed
 * or the rank or size is missing. */
dc_status dc_coord_from_env(dc_coord *c, char *err, size_t errlen);

/* The same when something else knows the world size (the mesh's device
 * matrix has a row per rank): rows is used when no size variable is set,
 * and a size variable that disagrees is an error naming rows_from. */
dc_status dc_coord_from_env_sized(dc_coord *c, int rows, const char *rows_from,
                                  char *err, size_t errlen);

/* The address (port 0) of network interface name: IPv4, else global IPv6.
 * DC_ERR_CONFIG "interface X does not exist or has no usable address". */
dc_status dc_iface_addr(const char *name, dc_addr *out, char *err,
                        size_t errlen);

/* When verbose and the job has no token: say once on stderr that only this
 * host's processes of this user may join it (protected mode). */
void dc_coord_note_no_token(const dc_coord *c);

/* The addresses (port 0) this rank should listen on: one per interface of
 * DISTCOMM_IFNAME, or the address that routes to the coordinator. */
dc_status dc_coord_local_addrs(const dc_coord *c, dc_addr *out, int max, int *n,
                               char *err, size_t errlen);

/* Exchange addresses: mine[0..n) are this rank's listeners (ports set).
 * On success *all is every rank's (free with dc_hostfile_free) and *job the
 * job id rank 0 chose (DISTCOMM_JOB_ID, or random). Every wait ends by
 * deadline (rank 0) or a little after (joiners wait for rank 0's verdict). */
dc_status dc_coord_rendezvous(const dc_coord *c, const dc_addr *mine, int n,
                              double deadline, dc_hostfile *all, uint64_t *job,
                              char *err, size_t errlen);

/* For the starts without a hostfile (coord_init.c, pmix.c), once this
 * rank's addresses mine[0..n) (port 0) are known: listen on each, and
 * beside each on its Unix twin for same-host peers (the kernel's ports go
 * into mine). On failure what was opened is closed and err names rank. */
dc_status dc_world_listen(int rank, dc_addr *mine, int n, int *fds, int *twins,
                          char *err, size_t errlen);

/* Close what dc_world_listen opened (when no group is built from it). */
void dc_world_unlisten(int *fds, int *twins, int n);

/* Then, with every rank's addresses (n each) in *all and the job id: the
 * world ring group (ring_build). The first listener stays open for
 * dc_group_shrink once it succeeds; the other fds and twins are closed and
 * *all freed either way. */
dc_status dc_world_build(int rank, int size, const dc_addr *mine, int n,
                         int *fds, int *twins, dc_hostfile *all, uint64_t job,
                         double timeout, dc_group **out, char *err,
                         size_t errlen);

#endif
