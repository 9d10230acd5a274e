/* all_reduce on a full mesh of links (the mesh backend): every rank owns
 * one block; each block goes straight to its owner over that pair's own
 * link (reduce-scatter), the owner adds the contributions in a fixed order,
 * and sends the sum straight to everyone (all-gather). Each rank then
 * sends and receives 2 (n-1)/n of the data, spread over its n-1 links
 * at once, where the ring sends it all through one link: on a mesh of
 * equal links this reaches the bound, 2 S / (n B). */
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "kernels/reduce.h"

typedef struct blocks {
  size_t esize, base,
      extra; /* elements: the first `extra` blocks get one more */
} blocks;

static size_t off_of(const blocks *b, int q) {
  size_t k = (size_t)q;
  return (k * b->base + (k < b->extra ? k : b->extra)) * b->esize;
}
static size_t len_of(const blocks *b, int q) {
  return (b->base + ((size_t)q < b->extra)) * b->esize;
}

/* One transfer split over every lane of the pair, in whole elements. */
static int striped(dc_xfer *x, int send, int peer, int lanes, size_t esize,
                   char *buf, size_t len) {
  size_t piece = len / esize / (size_t)lanes * esize, at = 0;
  for (int l = 0; l < lanes; l++) {
    size_t n = l + 1 < lanes ? piece : len - at;
    x[l] =
        send ? dc_xsend(peer, l, buf + at, n) : dc_xrecv(peer, l, buf + at, n);
    at += n;
  }
  return lanes;
}

/* Send block q of send to every q. Our block of the result is our own
 * contribution plus the left neighbour's, added as its bytes arrive (the
 * network and the adding overlap); the other peers' land in scratch and are
 * added after, always in the same order, so a call gives the same bits as
 * the last and, since only the owner adds a block, on every rank. */
static dc_status scatter_reduce(dc_comm *c, const blocks *b, const char *send,
                                char *scratch, dc_xfer *x, char *out) {
  size_t mine = len_of(b, c->rank);
  const char *own = send + off_of(b, c->rank);
  int k = 0;
  for (int i = 1; i < c->size; i++) {
    int to = (c->rank + i) % c->size, from = (c->rank - i + c->size) % c->size;
    k += striped(x + k, 1, to, c->lanes, b->esize, (char *)send + off_of(b, to),
                 len_of(b, to));
    int first = k;
    k += striped(x + k, 0, from, c->lanes, b->esize,
                 i == 1 ? out : scratch + (size_t)(i - 2) * mine, mine);
    for (int j = first; i == 1 && j < k; j++) { /* out = own + incoming */
      x[j].reduce = 1;
      x[j].src = own + ((char *)x[j].buf - out);
    }
  }
  dc_status st = c->run(c, x, k);
  for (int i = 2; st == DC_OK && i < c->size; i++)
    dc_reduce(out, scratch + (size_t)(i - 2) * mine, mine / b->esize, c->dtype,
              c->op);
  return st;
}

static dc_status gather_all(dc_comm *c, const blocks *b, char *recv,
                            dc_xfer *x) {
  int k = 0;
  for (int i = 1; i < c->size; i++) {
    int to = (c->rank + i) % c->size, from = (c->rank - i + c->size) % c->size;
    k += striped(x + k, 1, to, c->lanes, b->esize, recv + off_of(b, c->rank),
                 len_of(b, c->rank));
    k += striped(x + k, 0, from, c->lanes, b->esize, recv + off_of(b, from),
                 len_of(b, from));
  }
  return c->run(c, x, k);
}

dc_status dc_mesh_all_reduce(dc_comm *c, const void *send, void *recv) {
  blocks b = {.esize = dc_dtype_size(c->dtype)};
  size_t count = c->total_bytes / b.esize, n = (size_t)c->size;
  b.base = count / n;
  b.extra = count % n;
  char *scratch = malloc(len_of(&b, 0) * (n - 2) + 1);
  dc_xfer *x = malloc(sizeof *x * 2 * n * (size_t)c->lanes);
  dc_status st = scratch && x ? DC_OK : DC_ERR_NOMEM;
  if (st == DC_OK) /* our block of the result, then everyone's */
    st = scatter_reduce(c, &b, send, scratch, x,
                        (char *)recv + off_of(&b, c->rank));
  if (st == DC_OK)
    st = gather_all(c, &b, recv, x);
  free(scratch);
  free(x);
  return st;
}
