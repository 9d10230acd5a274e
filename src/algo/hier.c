/* The hierarchical all_reduce (algo/hier.h): three collectives on the two
 * subgroups, plus two small ones for a tail. */
#include "algo/hier.h"

#include "core/group.h"

#define STEP(group, call)                                                      \
  do {                                                                         \
    if (st == DC_OK && (st = (call)) != DC_OK)                                 \
      *failed = (group);                                                       \
  } while (0)

dc_status dc_hier_all_reduce(const dc_hier *h, const void *send, void *recv,
                             size_t count, dc_dtype dtype, dc_op op,
                             dc_group **failed) {
  size_t es = dc_dtype_size(dtype), L = (size_t)h->local->size;
  size_t block = count / L, head = block * L, tail = count - head;
  /* this rank's block of the result: the local reduce_scatter leaves it
   * there (in place it lies inside send: the algorithms allow that) */
  char *mine = (char *)recv + (size_t)h->local->rank * block * es;
  dc_status st = DC_OK;
  *failed = NULL;
  if (block) {
    STEP(h->local, dc_reduce_scatter(h->local, send, mine, block, dtype, op));
    STEP(h->rail, dc_all_reduce(h->rail, mine, mine, block, dtype, op));
    STEP(h->local, dc_all_gather(h->local, mine, recv, block, dtype));
  }
  if (tail) { /* fewer than L elements: latency, not bandwidth */
    char *out = (char *)recv + head * es;
    STEP(h->local, dc_all_reduce(h->local, (const char *)send + head * es, out,
                                 tail, dtype, op));
    STEP(h->rail, dc_all_reduce(h->rail, out, out, tail, dtype, op));
  }
  return st;
}
