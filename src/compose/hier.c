/* The hierarchical all_reduce (compose/hier.h), pipelined: the buffer is cut
 * into pieces, and while the rail all-reduces piece k (a request on the
 * rail group's progress thread, mostly waiting on the network), this
 * thread all-gathers piece k-1 and reduce-scatters piece k+1 inside the
 * host. So the work inside the host hides behind the links between hosts,
 * which are the bound. A tail that L does not divide goes last, blocking. */
#include <stdio.h>

#include "algo/geometry.h"
#include "compose/hier.h"

/* Pieces of at least this many bytes, at most MAX_PIECES of them: each
 * piece costs three collectives' rounds of latency. */
#define PIECE_BYTES (2u << 20)
#define MAX_PIECES 16

typedef struct hrun {
  const dc_hier *h;
  const char *send;
  char *recv;
  size_t es, block; /* element size; elements of each rank's block */
  dc_dtype dtype;
  dc_op op;
  int pieces;
  dc_request *req[2]; /* rail requests in flight, by piece parity */
  dc_status st;       /* the first failure */
  dc_group **failed;
  char *why;
  size_t whylen;
} hrun;

static void note(hrun *R, dc_group *g, dc_status st, const char *detail) {
  if (R->st != DC_OK || st == DC_OK)
    return;
  R->st = st;
  *R->failed = g;
  snprintf(R->why, R->whylen, "%s", detail);
}

/* Piece k: elements [*off, *off + L * *n) of the buffer, n per rank;
 * returns this rank's block of it in recv. */
static char *piece(const hrun *R, int k, size_t *off, size_t *n) {
  size_t L = (size_t)dc_group_size(R->h->local), P = (size_t)R->pieces;
  size_t a = dc_cut(R->block, P, (size_t)k);
  *n = dc_cut(R->block, P, (size_t)k + 1) - a;
  *off = a * L;
  return R->recv + (*off + (size_t)dc_group_rank(R->h->local) * *n) * R->es;
}

/* Reduce-scatter piece k inside the host, then start its rail all_reduce. */
static void scatter(hrun *R, int k) {
  size_t off, n;
  char *mine = piece(R, k, &off, &n);
  if (R->st != DC_OK)
    return;
  dc_group *local = R->h->local, *rail = R->h->rail;
  dc_status st =
      dc_reduce_scatter(local, R->send + off * R->es, mine, n, R->dtype, R->op);
  if (st != DC_OK) {
    note(R, local, st, dc_group_last_error(local));
    return;
  }
  st = dc_iall_reduce(rail, mine, mine, n, R->dtype, R->op, &R->req[k & 1]);
  if (st != DC_OK)
    note(R, rail, st, dc_group_last_error(rail));
}

/* Wait for piece k's rail all_reduce (always, even after a failure: its
 * buffers are ours to return), then all-gather it inside the host. */
static void gather(hrun *R, int k) {
  dc_request *q = R->req[k & 1];
  R->req[k & 1] = NULL;
  if (!q)
    return;
  dc_status st = dc_wait(q);
  if (st != DC_OK)
    note(R, R->h->rail, st, dc_request_error(q));
  dc_request_free(q);
  size_t off, n;
  char *mine = piece(R, k, &off, &n);
  if (R->st == DC_OK &&
      (st = dc_all_gather(R->h->local, mine, R->recv + off * R->es, n,
                          R->dtype)) != DC_OK)
    note(R, R->h->local, st, dc_group_last_error(R->h->local));
}

/* Fewer than L elements: latency, not bandwidth. */
static void tail(hrun *R, size_t head, size_t count) {
  const char *in = R->send + head * R->es;
  char *out = R->recv + head * R->es;
  dc_group *local = R->h->local, *rail = R->h->rail;
  dc_status st;
  if (R->st != DC_OK || head == count)
    return;
  st = dc_all_reduce(local, in, out, count - head, R->dtype, R->op);
  if (st != DC_OK) {
    note(R, local, st, dc_group_last_error(local));
    return;
  }
  st = dc_all_reduce(rail, out, out, count - head, R->dtype, R->op);
  if (st != DC_OK)
    note(R, rail, st, dc_group_last_error(rail));
}

dc_status dc_hier_all_reduce(const dc_hier *h, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_op op,
                             dc_group **failed, char *why, size_t whylen) {
  size_t L = (size_t)dc_group_size(h->local), es = dc_dtype_size(dtype);
  hrun R = {.h = h,
            .send = send,
            .recv = recv,
            .es = es,
            .block = count / L,
            .dtype = dtype,
            .op = op,
            .failed = failed,
            .why = why,
            .whylen = whylen};
  size_t pieces = R.block * L * es / PIECE_BYTES;
  pieces = pieces < MAX_PIECES ? pieces : MAX_PIECES;
  R.pieces = (int)(pieces < 1 ? 1 : pieces);
  *failed = NULL;
  if (R.block) {
    for (int k = 0; k < R.pieces; k++) {
      scatter(&R, k);
      if (k > 0)
        gather(&R, k - 1);
    }
    gather(&R, R.pieces - 1);
  }
  tail(&R, R.block * L, count);
  return R.st;
}
