#include "topo.h"

#include <stdlib.h>
#include <string.h>

int dcc_links_between(const struct dcc_topo *t, int x, int y) {
  int n = 0;
  for (int k = 0; k < t->nlinks; k++) {
    const struct dcc_link *l = &t->links[k];
    n += (l->a.host == x && l->b.host == y) ||
         (l->a.host == y && l->b.host == x);
  }
  return n;
}

int dcc_link_between(const struct dcc_topo *t, int x, int y, int j) {
  for (int k = 0; k < t->nlinks; k++) {
    const struct dcc_link *l = &t->links[k];
    if (((l->a.host == x && l->b.host == y) ||
         (l->a.host == y && l->b.host == x)) &&
        j-- == 0)
      return k;
  }
  return -1;
}

/* Held-Karp over subsets: the Hamiltonian cycle from host 0 with the
 * fewest pairs having fewer than `need` links. n <= 16, so 2^n * n states. */
struct hk {
  int n;
  int cost[DCC_MAX_HOSTS][DCC_MAX_HOSTS];
  size_t states;
  unsigned char *best, *from; /* [mask * n + j] */
};

static void hk_fill(struct hk *s) {
  int n = s->n;
  memset(s->best, 255, s->states);
  s->best[1 * n + 0] = 0;
  for (unsigned mask = 1; mask < (1u << n);
       mask += 2) /* paths start at host 0 */
    for (int j = 0; j < n; j++) {
      unsigned char c = s->best[mask * n + j];
      if (c == 255)
        continue;
      for (int x = 1; x < n; x++) {
        size_t to = (size_t)(mask | (1u << x)) * n + x;
        if (mask & (1u << x) || c + s->cost[j][x] >= s->best[to])
          continue;
        s->best[to] = (unsigned char)(c + s->cost[j][x]);
        s->from[to] = (unsigned char)j;
      }
    }
}

/* Closes the cheapest cycle; writes order[] and returns its cost. */
static int hk_close(struct hk *s, int order[]) {
  int n = s->n, end = 1, bestc = 1 << 30;
  unsigned mask = (1u << n) - 1;
  for (int j = 1; j < n; j++) {
    int c = s->best[mask * n + j] + s->cost[j][0];
    if (s->best[mask * n + j] != 255 && c < bestc) {
      bestc = c;
      end = j;
    }
  }
  for (int i = n - 1, j = end; i > 0; i--) {
    order[i] = j;
    int prev = s->from[mask * n + j];
    mask &= ~(1u << j);
    j = prev;
  }
  order[0] = 0;
  return bestc;
}

/* One direction for every run: the lower-numbered neighbour of host 0 second.
 */
static void normalise(int order[], int n) {
  if (n < 3 || order[1] < order[n - 1])
    return;
  for (int i = 1, j = n - 1; i < j; i++, j--) {
    int tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
}

static int hk_run(struct hk *s, const struct dcc_topo *t, int need,
                  int order[]) {
  for (int x = 0; x < s->n; x++)
    for (int y = 0; y < s->n; y++)
      s->cost[x][y] = x != y && dcc_links_between(t, x, y) < need;
  hk_fill(s);
  int c = hk_close(s, order);
  normalise(order, s->n);
  return c;
}

static int list_missing(const struct dcc_topo *t, const int order[],
                        int missing[][2]) {
  int n = t->nhosts, m = 0;
  for (int i = 0; i < (n == 2 ? 1 : n); i++) {
    int x = order[i], y = order[(i + 1) % n];
    if (dcc_links_between(t, x, y) > 0)
      continue;
    missing[m][0] = x < y ? x : y;
    missing[m++][1] = x < y ? y : x;
  }
  return m;
}

int dcc_ring_find(const struct dcc_topo *t, int order[], int *rings,
                  int missing[][2], int *nmissing) {
  if (t->nhosts < 2 || t->nhosts > DCC_MAX_HOSTS)
    return -2;
  struct hk s = {.n = t->nhosts,
                 .states = ((size_t)1 << t->nhosts) * (size_t)t->nhosts};
  s.best = malloc(s.states);
  s.from = malloc(s.states);
  int rc = s.best && s.from ? -1 : -2, most = 0;
  for (int x = 0; x < s.n; x++)
    for (int y = x + 1; y < s.n; y++)
      if (dcc_links_between(t, x, y) > most)
        most = dcc_links_between(t, x, y);
  for (int need = most; rc == -1 && need >= 1; need--)
    if (hk_run(&s, t, need, order) == 0) {
      *rings = need;
      rc = 0;
    }
  if (rc == -1) {
    hk_run(&s, t, 1, order);
    *nmissing = list_missing(t, order, missing);
  }
  free(s.best);
  free(s.from);
  return rc;
}

int dcc_mesh_missing(const struct dcc_topo *t, int missing[][2]) {
  int m = 0;
  for (int x = 0; x < t->nhosts; x++)
    for (int y = x + 1; y < t->nhosts; y++)
      if (dcc_links_between(t, x, y) == 0) {
        missing[m][0] = x;
        missing[m++][1] = y;
      }
  return m;
}
