/* dc_group_split for every backend: agree on the members through the parent
 * (one all_gather of (color, key)), then let the backend connect them. */
#include <stdint.h>
#include <stdlib.h>

#include "core/group.h"

typedef struct member {
  int32_t color, key, rank;
} member;

static int by_key(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Mix parent id, split number and color into the child's id (splitmix64). */
static uint64_t child_id(uint64_t parent, uint64_t seq, int color) {
  uint64_t z = parent ^ (seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)color << 32);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Members of this rank's color, ordered by key then parent rank. */
static int pick(const int32_t *all, int size, int color, member *out) {
  int n = 0;
  for (int r = 0; r < size; r++) {
    if (all[2 * r] != color)
      continue;
    out[n].color = color;
    out[n].key = all[2 * r + 1] < 0 ? r : all[2 * r + 1];
    out[n].rank = r;
    n++;
  }
  qsort(out, (size_t)n, sizeof *out, by_key);
  return n;
}

static dc_status build(dc_group *g, const member *m, int n, int color,
                       dc_group **out) {
  int *ranks = malloc(sizeof(int) * (size_t)n);
  if (!ranks)
    return dc_fail(g, DC_ERR_NOMEM, "no memory for %d members", n);
  int me = 0;
  for (int i = 0; i < n; i++) {
    ranks[i] = m[i].rank;
    if (m[i].rank == g->rank)
      me = i;
  }
  uint64_t id = child_id(g->id, g->seq, color);
  dc_status st;
  if (n == 1) {
    *out = dc_group_new(&dc_single_ops, NULL, 0, 1, id);
    st = *out ? DC_OK : dc_fail(g, DC_ERR_NOMEM, "no memory for a group");
  } else {
    st = g->ops->split(g, ranks, n, me, id, out);
  }
  free(ranks);
  if (st == DC_OK) {
    (*out)->timeout_s = g->timeout_s;
    (*out)->verbose = g->verbose;
  }
  return st;
}

dc_status dc_group_split(dc_group *g, int color, int key, dc_group **out) {
  if (!out)
    return dc_init_fail(DC_ERR_INVALID, "split: out is NULL");
  *out = NULL;
  dc_status entered = dc_enter(g, "split");
  if (entered != DC_OK)
    return entered;
  g->seq++;
  return dc_split_within(g, color, key, out);
}

dc_status dc_split_within(dc_group *g, int color, int key, dc_group **out) {
  *out = NULL;
  if (g->ops->split_all && g->size > 1)
    return g->ops->split_all(g, color, key, out);
  int32_t mine[2] = {color < 0 ? -1 : color, key};
  int32_t *all = malloc(sizeof mine * (size_t)g->size);
  member *m = malloc(sizeof *m * (size_t)g->size);
  dc_status st = all && m ? DC_OK : DC_ERR_NOMEM;
  if (st == DC_OK && g->size > 1)
    st = g->ops->all_gather(g, mine, all, 2, DC_INT32);
  else if (st == DC_OK)
    all[0] = mine[0], all[1] = mine[1];
  if (st == DC_OK && color >= 0)
    st = build(g, m, pick(all, g->size, color, m), color, out);
  free(all);
  free(m);
  return st == DC_ERR_NOMEM && g->err[0] == '\0'
             ? dc_fail(g, st, "no memory for %d ranks", g->size)
             : st;
}
