/* perf.h - distcomm-perf internals shared by its three source files:
 * perf_main.c (options, set-up), perf_data.c (test patterns and checks),
 * perf_bench.c (timing loop and report). */
#ifndef DC_PERF_H
#define DC_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

typedef enum perf_op {
  PERF_ALL_REDUCE,
  PERF_ALL_GATHER,
  PERF_REDUCE_SCATTER,
  PERF_BROADCAST,
  PERF_SENDRECV,
  PERF_ALL_TO_ALL,  /* size = each rank's send (and receive) bytes */
  PERF_GATHER,      /* size = root's gathered bytes, like all_gather */
  PERF_SCATTER,     /* size = root's send bytes */
  PERF_REDUCE,      /* dc_reduce_to */
  PERF_IALL_REDUCE, /* dc_iall_reduce + dc_wait: the cost of a request */
  PERF_OP_COUNT
} perf_op;

#define PERF_MAX_SIZES 128

typedef struct perf_opts {
  unsigned ops;                 /* bit (1u << perf_op) per op to run */
  size_t sizes[PERF_MAX_SIZES]; /* requested sizes in bytes, ascending */
  size_t nsizes;
  int iters;  /* timed iterations per run; 0 = by size, as the peers */
  int warmup; /* untimed iterations; -1 = as many as iters */
  int runs;   /* timed runs per size; the median is reported */
  dc_dtype dtype;
  dc_op redop;
  int check;        /* 1: patterned data, one verified call per size */
  int per_rank;     /* 1: print every rank's own time too */
  int peers_format; /* 1: run-peers.sh columns instead of nccl-tests' */
  int root;         /* root of broadcast, gather, scatter, reduce */
} perf_opts;

/* The shape of one measured call: what the row reports and what the call
 * is given. For all_gather and reduce_scatter, count is per rank. */
typedef struct perf_shape {
  size_t bytes;  /* the size column (gathered output / scatter input) */
  size_t count;  /* elements passed to the call */
  size_t sbytes; /* bytes read from the send buffer */
  size_t rbytes; /* bytes written to the receive buffer */
} perf_shape;

typedef struct perf_ctx {
  const perf_opts *o;
  dc_group *g;
  int rank, size;
  void *sb, *rb; /* send / receive buffers, cap bytes each */
  size_t cap;
  long long wrong;  /* wrong elements over all ranks, all sizes */
  double busbw_sum; /* for the closing average */
  int rows;
} perf_ctx;

/* perf_main.c */
const char *perf_op_name(perf_op op);
/* Prints "distcomm-perf: rank R: WHAT: <strerror> (<detail>)" and exits 1. */
void perf_fail(const perf_ctx *c, dc_status st, const char *what);

/* perf_bench.c */
perf_shape perf_shape_for(perf_op op, size_t bytes, int nranks, size_t esz);
void perf_print_banner(const perf_ctx *c);
void perf_run_op(perf_ctx *c, perf_op op);
void perf_print_summary(const perf_ctx *c);

/* perf_data.c */
/* Fills the inputs of op for this rank (and poisons the output). */
void perf_fill(const perf_ctx *c, perf_op op, const perf_shape *sh);
/* Poisons the output so a call that writes nothing is caught. */
void perf_poison(const perf_ctx *c, perf_op op, const perf_shape *sh);
/* Counts this rank's wrong output elements after one call of op. */
size_t perf_verify(const perf_ctx *c, perf_op op, const perf_shape *sh);

#endif /* DC_PERF_H */
