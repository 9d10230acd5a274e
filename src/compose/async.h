/* Non-blocking requests (src/compose): a FIFO and a progress thread per
 * group. The thread runs the blocking public calls in issue order; blocking
 * calls on the group wait for the FIFO to empty first (dc_async_drain,
 * which the group reaches through the gate registered on first use:
 * dc_inflight in core/group.h). */
#ifndef DC_COMPOSE_ASYNC_H
#define DC_COMPOSE_ASYNC_H

#include <stddef.h>

#include "distcomm.h"

typedef enum dc_rq_kind {
  DC_RQ_ALL_REDUCE,
  DC_RQ_ALL_GATHER,
  DC_RQ_REDUCE_SCATTER,
  DC_RQ_SEND,
  DC_RQ_RECV,
  DC_RQ_BROADCAST,
  DC_RQ_BARRIER,
  DC_RQ_ALL_TO_ALL,
  DC_RQ_ALL_TO_ALLV,
  DC_RQ_GATHER,
  DC_RQ_SCATTER,
  DC_RQ_REDUCE_TO,
} dc_rq_kind;

/* What a request runs: the arguments of the blocking call. */
typedef struct dc_rq_args {
  dc_rq_kind kind;
  const void *send;
  void *recv;
  size_t count;
  dc_dtype dtype;
  dc_op op;
  int peer;                                /* dst, src or root */
  const size_t *scnt, *soff, *rcnt, *roff; /* all_to_allv */
} dc_rq_args;

/* Queue a request on g's progress thread (started on first use). NULL
 * group or req: DC_ERR_INVALID; a poisoned group: its status, at once. */
dc_status dc_async_issue(dc_group *g, const char *name, const dc_rq_args *a,
                         dc_request **req);

/* The gate's drain, for every blocking entry point: wait until g has no request
 * in flight (no-op on the progress thread itself or without requests). */
void dc_async_drain(dc_group *g);

/* dc_group_set_interrupt changed g->interrupt (queue drained): waiters
 * poll the new one. */
void dc_async_set_interrupt(dc_group *g);

/* Group teardown: wait for requests, stop and join the thread, drop the
 * group's reference to the shared state. */
void dc_async_release(dc_group *g);

#endif
