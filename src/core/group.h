/* The group object and the backend table (src/core/group.c, init.c).
 *
 * A backend is a table of functions; callers never touch it: the public
 * dc_* calls in group.c check arguments, refuse poisoned groups, then forward
 * to the table. Backends set the detail with dc_fail() and return its status.
 */
#ifndef DC_CORE_GROUP_H
#define DC_CORE_GROUP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h" /* dc_now */
#include "config/env.h" /* dc_env_verbose, dc_default_timeout */
#include "distcomm.h"

typedef struct dc_backend_ops {
  const char *name;
  dc_status (*all_reduce)(dc_group *g, const void *send, void *recv,
                          size_t count, dc_dtype dtype, dc_op op);
  dc_status (*all_gather)(dc_group *g, const void *send, void *recv,
                          size_t count, dc_dtype dtype);
  dc_status (*reduce_scatter)(dc_group *g, const void *send, void *recv,
                              size_t count, dc_dtype dtype, dc_op op);
  dc_status (*send)(dc_group *g, const void *buf, size_t count, dc_dtype dtype,
                    int dst);
  dc_status (*recv)(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                    int src);
  dc_status (*broadcast)(dc_group *g, void *buf, size_t count, dc_dtype dtype,
                         int root);
  dc_status (*barrier)(dc_group *g);
  /* Counts and offsets in elements; all_to_all has them equal. */
  dc_status (*all_to_allv)(dc_group *g, const void *send, const size_t *scnt,
                           const size_t *soff, void *recv, const size_t *rcnt,
                           const size_t *roff, dc_dtype dtype);
  dc_status (*all_to_all)(dc_group *g, const void *send, void *recv,
                          size_t count, dc_dtype dtype);
  dc_status (*gather)(dc_group *g, const void *send, void *recv, size_t count,
                      dc_dtype dtype, int root);
  dc_status (*scatter)(dc_group *g, const void *send, void *recv, size_t count,
                       dc_dtype dtype, int root);
  dc_status (*reduce_to)(dc_group *g, const void *send, void *recv,
                         size_t count, dc_dtype dtype, dc_op op, int root);
  /* Members of one color already chosen and ordered by group.c: ranks[i] is
   * the parent rank of new rank i; me is this rank's new rank. */
  dc_status (*split)(dc_group *g, const int *ranks, int n, int me,
                     uint64_t color_tag, dc_group **out);
  /* Optional: a backend with its own split (MPI_Comm_split) takes the whole
   * call, on every rank of the parent, instead of the one above. */
  dc_status (*split_all)(dc_group *g, int color, int key, dc_group **out);
  void (*destroy)(dc_group *g); /* close connections, free impl */
  /* Best effort after a failure: tell peers (abort frame / shutdown) so
   * nobody waits on this rank. Must not block. May be NULL. */
  void (*poison)(dc_group *g);
  /* dc_group_shrink on g, already poisoned (its detail stays the first
   * failure's, so err takes the shrink's). NULL where the backend cannot:
   * DC_ERR_NOT_SUPPORTED. */
  dc_status (*shrink)(dc_group *g, dc_group **out, char *err, size_t errlen);
} dc_backend_ops;

struct dc_group {
  const dc_backend_ops *ops;
  void *impl; /* backend state */
  int rank, size;
  int refs; /* references handed out (world group: dc_init calls) */
  int is_world;
  double timeout_s;          /* max seconds without progress */
  dc_interrupt_fn interrupt; /* polled while waiting; non-zero abandons */
  void *interrupt_arg;
  int verbose;         /* log to stderr */
  dc_status failed;    /* first communication failure: the group is poisoned */
  const char *op_name; /* public name of the op in progress ("all_sum");
                          "": none, the detail is not prefixed */
  uint64_t seq;        /* collectives issued so far (frames carry it) */
  uint64_t id;   /* group id: same on every member, differs between groups */
  char err[512]; /* detail of the last failure */
  struct dc_async *async; /* non-blocking requests' state, or NULL */
  const struct dc_inflight *inflight; /* their gate, or NULL */
};

/* Work in flight on g that blocking calls wait behind. The requests
 * (compose/request.c) register their gate on first use, so the group
 * waits for them without naming the layer above it. */
typedef struct dc_inflight {
  void (*drain)(dc_group *g);         /* until nothing is in flight */
  void (*set_interrupt)(dc_group *g); /* g->interrupt changed: poll it */
  void (*release)(dc_group *g);       /* teardown: wait, stop, forget */
} dc_inflight;

static inline void dc_inflight_drain(dc_group *g) {
  if (g->inflight)
    g->inflight->drain(g);
}
static inline void dc_inflight_set_interrupt(dc_group *g) {
  if (g->inflight)
    g->inflight->set_interrupt(g);
}
static inline void dc_inflight_release(dc_group *g) {
  if (g->inflight)
    g->inflight->release(g);
}

/* Allocate a group with defaults (timeout from DISTCOMM_TIMEOUT or 300 s). */
dc_group *dc_group_new(const dc_backend_ops *ops, void *impl, int rank,
                       int size, uint64_t id);

/* Entry of every public call on a group: DC_ERR_INVALID for a NULL group,
 * the first failure of a poisoned one; otherwise names the op for errors
 * and clears the last detail. */
dc_status dc_enter(dc_group *g, const char *name);

/* Record a failure: formats "op: " + fmt into g->err and returns st. When
 * st is a communication failure (timeout, peer lost, mismatch, system,
 * auth) the group becomes poisoned. */
dc_status dc_fail(dc_group *g, dc_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
dc_status dc_vfail(dc_group *g, dc_status st, const char *fmt, va_list ap);

/* dc_fail on behalf of a helper that is not a collective itself (e.g.
 * "average_gradients"): names it as the op. */
dc_status dc_fail_as(dc_group *g, const char *op, dc_status st, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));

/* dc_group_split inside another call on g (its op name and collective
 * number stay): a backend that splits g for an algorithm of its own, on
 * every rank of g at the same call. Colors must differ between two such
 * splits at one call (the children's ids come from the number and color). */
dc_status dc_split_within(dc_group *g, int color, int key, dc_group **out);

/* A backend's shrink, once it knows it can: poison g unless it is. */
void dc_shrink_poison(dc_group *g);

/* Record an init failure for dc_last_error(); returns st. */
dc_status dc_init_fail(dc_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Log a line to stderr when verbose: "[distcomm rank N] ...". */
void dc_log(const dc_group *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The hooks through which a mesh (transport/mesh.h) reports to g. */
struct dc_engine_hooks dc_group_hooks(dc_group *g);

/* Backends. */
extern const dc_backend_ops dc_single_ops;
/* Build the world ring group from MLX_RANK / MLX_HOSTFILE. DC_ERR_UNAVAILABLE
 * when they are not set; other errors name what is wrong (dc_last_error). */
dc_status dc_ring_init(dc_group **out);
/* The world ring group through a coordinator's rendezvous (MLX_JACCL_
 * COORDINATOR, DISTCOMM_COORDINATOR or MASTER_ADDR, with a rank and a world
 * size): DC_ERR_UNAVAILABLE when no coordinator is set. */
dc_status dc_ring_coord_init(dc_group **out);
/* The mesh (JACCL) world group: MLX_IBV_DEVICES + a coordinator; the ring
 * variant connects neighbours only (jaccl-ring). DC_ERR_UNAVAILABLE when
 * MLX_IBV_DEVICES is unset. */
dc_status dc_mesh_init(dc_group **out);
dc_status dc_mesh_ring_init(dc_group **out);
/* The world ring group under a PMIx server (mpirun, prterun, srun
 * --mpi=pmix: PMIX_NAMESPACE and PMIX_RANK set), addresses exchanged through
 * PMIx (src/bootstrap/pmix.c): DC_ERR_UNAVAILABLE without a server or when
 * libpmix cannot be loaded. */
dc_status dc_ring_pmix_init(dc_group **out);
/* Whether a PMIx server started this process (its variables are set). */
int dc_pmix_server(void);
/* The MPI world group when started by an MPI launcher (src/backends/mpi). */
dc_status dc_mpi_init(dc_group **out);

#endif
