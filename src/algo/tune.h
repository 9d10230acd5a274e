/* Choosing between single copy and the pipes, by measuring.
 *
 * Whether process_vm_readv (one copy, but the kernel pins every page) beats
 * two copies through shared-memory pipes (pipelined on two cores) depends
 * on the machine: where the ranks' cores sit and what pinning costs. The
 * same build measured 1.3x in favour of single copy on one VM and 2x
 * against it on another. So each group measures both, per op and size
 * class, and keeps voting for the faster one.
 *
 * Every rank runs the same schedule (it depends only on how many calls of
 * that op and size class the group has made, and for collectives on what
 * the group agreed), so all ranks explore together; at a decision each
 * rank votes from its own timings and single copy is used only when every
 * rank votes for it (algo/pull.c's first round carries the vote); point to
 * point votes every large send, the sender alone. Both paths give every rank
 * the same bits; with more than 2 ranks they may sum in a different order, so a
 * forced choice (DISTCOMM_CMA=0 or 1) is what gives the same bits call after
 * call.
 *
 * all_gather and point to point are measured too: single copy moves each
 * byte once where the pipes move it twice, yet on a quiet VM with slow
 * page pinning the pipes won 1.1-2.5x from 16 MiB (bench/peers/shm-tuning.md),
 * while on a loaded one single copy won by as much.
 *
 * One tuner per group, used by the thread that runs the group's ops. */
#ifndef DC_ALGO_TUNE_H
#define DC_ALGO_TUNE_H

#include <stddef.h>

typedef enum dc_tune_kind {
  DC_TUNE_ALL_REDUCE,
  DC_TUNE_ALL_GATHER,
  DC_TUNE_REDUCE_SCATTER,
  DC_TUNE_P2P, /* a send too large for a pipe: the sender's vote alone */
  DC_TUNE_KINDS
} dc_tune_kind;

typedef enum dc_tune_mode {
  DC_TUNE_AUTO, /* measure (the default) */
  DC_TUNE_PULL, /* always single copy where it can (DISTCOMM_CMA=1) */
  DC_TUNE_PIPES /* never */
} dc_tune_mode;

/* A path's first call after the other's is slow (caches, page tables,
 * the pipes' pages: 1.5-5x on the slow VM of bench/peers/shm-tuning.md), so a
 * path is tried in bursts of DC_TUNE_BURST calls: the warm one then
 * counts among its best, as the path in use has its warm calls. With
 * single tries, the path in use won every retry by that penalty alone. */
#define DC_TUNE_SAMPLES 4 /* the best of the last few: noise only adds */
#define DC_TUNE_BURST 2   /* calls of a path in a row when trying it */
#define DC_TUNE_EXPLORE 4 /* first calls: a burst of each path */
#define DC_TUNE_RETRY 64  /* then a burst of the other per this many */

typedef struct dc_tune_class {
  unsigned calls;
  int trying;                        /* the path of the current retry */
  int agreed;                        /* collectives: 0 none yet, 1 the
                                        pipes, 2 single copy */
  unsigned n[2];                     /* samples taken, [0] pipes, [1] pull */
  float seconds[2][DC_TUNE_SAMPLES]; /* per call */
} dc_tune_class;

typedef struct dc_tune {
  dc_tune_mode mode;
  dc_tune_class cls[DC_TUNE_KINDS][64]; /* size class: log2 of the bytes */
} dc_tune;

/* A tuner for a one-host group; forced (alike on every rank) always
 * pulls. NULL when out of memory. Freed with free(). */
dc_tune *dc_tune_new(int forced);

/* This rank's vote for the coming call: 1 single copy, 0 pipes. Counts
 * the call. */
int dc_tune_vote(dc_tune *t, dc_tune_kind kind, size_t bytes);
/* A collective's path for the coming call, for every rank alike (counts
 * the call). Most calls need no vote: the shared schedule (exploration, a
 * burst of the other path per DC_TUNE_RETRY calls) or the group's last
 * agreement says the path. One call after each burst is a decision: the
 * ranks vote (single copy's first round carries the votes) and
 * dc_tune_agreed records what they chose, kept until the next decision.
 * Where the pipes win, their calls then skip single copy's vote round, a
 * small message each way (0.3-1 us, as much as a 32 KiB all_gather's
 * copy). */
typedef enum dc_tune_plan {
  DC_TUNE_GO_PIPES,   /* the pipes, no vote */
  DC_TUNE_GO_PULL,    /* single copy, no vote (its round still runs) */
  DC_TUNE_VOTE_PIPES, /* a decision: this rank votes for the pipes */
  DC_TUNE_VOTE_PULL   /* a decision: this rank votes for single copy */
} dc_tune_plan;
dc_tune_plan dc_tune_collective(dc_tune *t, dc_tune_kind kind, size_t bytes);
/* After a decision: what the ranks chose (pulled: single copy). */
void dc_tune_agreed(dc_tune *t, dc_tune_kind kind, size_t bytes, int pulled);
/* What the call took, by the path it took (pulled: single copy). */
void dc_tune_record(dc_tune *t, dc_tune_kind kind, size_t bytes, int pulled,
                    double seconds);

#endif
