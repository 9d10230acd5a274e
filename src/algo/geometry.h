/* How a buffer is cut for the ring: into parts (one per lane and direction,
 * each an independent ring), each part into one segment per rank, each
 * segment into pipeline chunks. Cuts are on element boundaries and as even
 * as possible, so every rank computes the same cuts from (count, size). */
#ifndef DC_ALGO_GEOMETRY_H
#define DC_ALGO_GEOMETRY_H

#include <stddef.h>

/* Start of piece i when n elements are cut into k pieces. */
static inline size_t dc_cut(size_t n, size_t k, size_t i) {
  size_t base = n / k, rem = n % k;
  return i * base + (i < rem ? i : rem);
}

typedef struct dc_range {
  size_t off, len; /* elements */
} dc_range;

static inline dc_range dc_piece(dc_range whole, size_t k, size_t i) {
  size_t a = dc_cut(whole.len, k, i), b = dc_cut(whole.len, k, i + 1);
  return (dc_range){whole.off + a, b - a};
}

static inline int dc_mod(long a, int n) { return (int)(((a % n) + n) % n); }

#endif
