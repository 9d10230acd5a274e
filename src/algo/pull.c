/* Single-copy algorithms for ranks that can read each other's memory
 * (c->pull: process_vm_readv between processes of one host). Ranks first
 * swap where their buffers are (a small frame each way, so ranks that run
 * different ops still fail with a mismatch), then each reads what it needs
 * straight from its peers' buffers: one copy instead of the pipes' two.
 * DC_ERR_NOT_SUPPORTED, on every rank alike, when some rank cannot read
 * every peer or its buffers overlap in a way this cannot serve: the caller
 * takes another path.
 *
 * A buffer is read by peers only between two of our frames, so an empty
 * round of frames ("done") ends every phase in which peers read from us:
 * no rank returns, or overwrites what a peer still reads, before then. */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/geometry.h"
#include "kernels/reduce.h"

/* Pulled and reduced piece by piece, so the piece stays in L1/L2. */
#define PIECE_BYTES (64u * 1024u)
/* Up to this size two ranks each reduce the whole of an all_reduce
 * (dc_pull_all_reduce): where the cores sit on different dies, 1 MiB took
 * 202 us instead of 328, 256 KiB 55 instead of 78; from 4 MiB the peer's
 * results have left its cache anyway and the extra additions cost more
 * (4 MiB 0.92x, 16 MiB 0.88x). */
#define WHOLE_MAX_BYTES (2u * 1024u * 1024u)

typedef struct where {
  uint64_t send, recv; /* the rank's buffers, in its own address space */
  uint64_t ok;         /* 0: it cannot read every peer, or its buffers
                          overlap in a way we cannot serve */
} where;

/* Every rank learns where the others' buffers are, and whether all can
 * take this path: if one cannot, all return DC_ERR_NOT_SUPPORTED together
 * (the caller then takes another algorithm, on every rank alike). */
static dc_status swap_where(dc_comm *c, const void *send, void *recv, int ok,
                            where *all) {
  where me = {(uint64_t)(uintptr_t)send, (uint64_t)(uintptr_t)recv,
              (uint64_t)ok};
  all[c->rank] = me;
  dc_status st = dc_direct_round(c, &me, all, sizeof me);
  for (int q = 0; st == DC_OK && q < c->size; q++)
    if (!all[q].ok)
      st = DC_ERR_NOT_SUPPORTED;
  return st;
}

static dc_status done_round(dc_comm *c) {
  static char none;
  return dc_direct_round(c, &none, &none, 0);
}

/* dst = every rank's bytes at base[q] + off, reduced in rank order (as
 * the direct algorithm does), for bytes bytes; own is ours. The sum grows
 * in dst itself, except in place on ranks > 0 (dst holds our operand
 * until its turn): there in acc, copied to dst at the end. With may_swap,
 * rank 0 out of place starts the sum with rank 1's bytes, pulled straight
 * into dst, and adds its own, which saves copying its own piece first:
 * x1 op x0 is x0 op x1 (kernels/reduce.h) but for the payload of two NaNs,
 * so only where no other rank computes the same elements. */
static dc_status reduce_from(dc_comm *c, char *dst, const char *own,
                             const uint64_t *base, size_t off, size_t bytes,
                             char *scratch, char *acc, int may_swap) {
  size_t es = dc_dtype_size(c->dtype);
  int apart = dst == own && c->rank > 0;
  int swap = may_swap && c->rank == 0 && dst != own && c->size > 1;
  for (size_t at = 0; at < bytes; at += PIECE_BYTES) {
    size_t len = bytes - at < PIECE_BYTES ? bytes - at : PIECE_BYTES;
    char *sum = apart ? acc : dst + at;
    for (int q = 0; q < c->size; q++) {
      const char *in = q == c->rank ? own + at : scratch;
      if (swap && q < 2) { /* sum = x1, then sum op= x0 */
        if (q == 0)
          continue;
        dc_status st = c->pull(c, 1, sum, base[1] + off + at, len);
        if (st != DC_OK)
          return st;
        in = own + at;
      } else if (q != c->rank) {
        dc_status st =
            c->pull(c, q, q == 0 ? sum : scratch, base[q] + off + at, len);
        if (st != DC_OK)
          return st;
      } else if (q == 0 && sum != own + at) {
        memcpy(sum, own + at, len);
      }
      if (q > 0)
        dc_reduce(sum, in, len / es, c->dtype, c->op);
    }
    if (apart)
      memcpy(dst + at, acc, len);
  }
  return DC_OK;
}

static int overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *x = a, *y = b;
  return x < y + nb && y < x + na;
}

/* Slice r of the buffer (cut as the ring cuts) is reduced by rank r from
 * everyone's send buffer; then every rank reads the other slices from
 * their owners' recv buffers. In place, a rank overwrites its other
 * slices only after the "done" round: every peer has read them by then.
 *
 * Two ranks both out of place, up to WHOLE_MAX_BYTES, each reduce the
 * whole buffer instead: the same bytes pulled, but all from the peer's
 * send buffer, which it does not write, and one round fewer. The second
 * half of the sliced way reads what the peer has just written, lines held
 * in its cache: where the two cores sit on different dies that read took
 * twice the first (bench/peers/shm-tuning.md, session 16). Both sum in rank
 * order, x0 op x1 (no swap on rank 0): of two NaNs a sum keeps the first's
 * payload, and each rank computes every element here. */
dc_status dc_pull_all_reduce(dc_comm *c, const void *send, void *recv) {
  size_t es = dc_dtype_size(c->dtype);
  int ok = c->pull_ok && (send == recv ||
                          !overlap(send, c->total_bytes, recv, c->total_bytes));
  where *w = calloc((size_t)c->size, sizeof *w);
  uint64_t *base = calloc((size_t)c->size, sizeof *base);
  char *scratch = malloc(2 * PIECE_BYTES); /* pulled, and a sum apart */
  dc_status st =
      w && base && scratch ? swap_where(c, send, recv, ok, w) : DC_ERR_NOMEM;
  /* from what every rank swapped: a rank in place would break the rounds */
  int whole = st == DC_OK && c->size == 2 &&
              c->total_bytes <= WHOLE_MAX_BYTES && w[0].send != w[0].recv &&
              w[1].send != w[1].recv;
  dc_range mine = whole ? (dc_range){0, c->count}
                        : dc_piece((dc_range){0, c->count}, (size_t)c->size,
                                   (size_t)c->rank);
  for (int q = 0; st == DC_OK && q < c->size; q++)
    base[q] = w[q].send;
  if (st == DC_OK)
    st = reduce_from(c, (char *)recv + mine.off * es,
                     (const char *)send + mine.off * es, base, mine.off * es,
                     mine.len * es, scratch, scratch + PIECE_BYTES, !whole);
  if (st == DC_OK)
    st = done_round(c); /* every slice reduced; no one reads inputs now */
  for (int q = 0; st == DC_OK && !whole && q < c->size; q++) {
    dc_range s = dc_piece((dc_range){0, c->count}, (size_t)c->size, (size_t)q);
    if (q != c->rank && s.len)
      st = c->pull(c, q, (char *)recv + s.off * es, w[q].recv + s.off * es,
                   s.len * es);
  }
  if (st == DC_OK && !whole)
    st = done_round(c); /* no one reads our recv any more */
  free(scratch);
  free(base);
  free(w);
  return st;
}

/* Block r of every rank's send buffer, reduced by rank r into recv. */
dc_status dc_pull_reduce_scatter(dc_comm *c, const void *send, void *recv) {
  size_t block = c->total_bytes;
  /* in place, peers could still read what we write */
  int ok = c->pull_ok && !overlap(send, block * (size_t)c->size, recv, block);
  where *w = calloc((size_t)c->size, sizeof *w);
  uint64_t *base = calloc((size_t)c->size, sizeof *base);
  char *scratch = malloc(2 * PIECE_BYTES); /* pulled, and a sum apart */
  dc_status st =
      w && base && scratch ? swap_where(c, send, recv, ok, w) : DC_ERR_NOMEM;
  size_t off = (size_t)c->rank * block;
  for (int q = 0; st == DC_OK && q < c->size; q++)
    base[q] = w[q].send;
  if (st == DC_OK)
    st = reduce_from(c, recv, (const char *)send + off, base, off, block,
                     scratch, scratch + PIECE_BYTES, 1);
  if (st == DC_OK)
    st = done_round(c);
  free(scratch);
  free(base);
  free(w);
  return st;
}

/* Every rank copies each peer's send buffer straight into its block. */
dc_status dc_pull_all_gather(dc_comm *c, const void *send, void *recv) {
  size_t block = c->total_bytes;
  char *mine = (char *)recv + (size_t)c->rank * block;
  int ok = c->pull_ok && (send == mine ||
                          !overlap(send, block, recv, block * (size_t)c->size));
  where *w = calloc((size_t)c->size, sizeof *w);
  dc_status st = w ? swap_where(c, send, recv, ok, w) : DC_ERR_NOMEM;
  if (st == DC_OK && send != mine)
    memcpy(mine, send, block);
  for (int q = 0; st == DC_OK && q < c->size; q++)
    if (q != c->rank)
      st = c->pull(c, q, (char *)recv + (size_t)q * block, w[q].send, block);
  if (st == DC_OK)
    st = done_round(c);
  free(w);
  return st;
}
