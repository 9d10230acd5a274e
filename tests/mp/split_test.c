/* split_test: dc_group_split semantics, then two subgroups used side by side
 * from two threads. Run through the launcher on 3 or 4 ranks.
 *
 * For each (color, key) rule every rank computes the expected members of its
 * subgroup (same color, ordered by key, ties and key < 0 in parent order) and
 * checks rank, size, an all_gather of parent ranks (the order), an all_sum
 * and a send/recv inside the subgroup. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

#define MAXR 64
#define THREAD_ITERS 40
#define THREAD_COUNT 65536

typedef struct tally {
  int rank;
  long pass, fail;
  pthread_mutex_t lock; /* the two threads report here */
} tally;

static void check(tally *t, int ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void check(tally *t, int ok, const char *fmt, ...) {
  pthread_mutex_lock(&t->lock);
  if (ok) {
    t->pass++;
  } else if (t->fail++ < 10) {
    va_list ap;
    va_start(ap, fmt);
    printf("rank %d: FAIL ", t->rank);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
  }
  pthread_mutex_unlock(&t->lock);
}

/* ---- rules ------------------------------------------------------------- */

typedef struct rule {
  const char *name;
  int (*color)(int r, int n);
  int (*key)(int r, int n);
} rule;

static int c_parity(int r, int n) { return (void)n, r % 2; }
static int c_pairs(int r, int n) { return (void)n, r / 2; }
static int c_all(int r, int n) { return (void)r, (void)n, 7; }
static int c_evens(int r, int n) { return (void)n, r % 2 ? DC_UNDEFINED : 0; }
static int k_none(int r, int n) { return (void)r, (void)n, -1; }
static int k_reverse(int r, int n) { return n - r; }
static int k_tie(int r, int n) { return (void)r, (void)n, 0; }
static int k_rotate(int r, int n) { return (r + 1) % n; }

static const rule rules[] = {
    {"parity", c_parity, k_none},    {"pairs", c_pairs, k_none},
    {"reverse", c_all, k_reverse},   {"ties", c_all, k_tie},
    {"rotate", c_all, k_rotate},     {"parity-reversed", c_parity, k_reverse},
    {"evens-only", c_evens, k_none},
};

/* Members of rank me's subgroup in their new order; returns how many. */
static int expected_members(const rule *ru, int me, int n, int *out) {
  int m = 0, color = ru->color(me, n);
  for (int r = 0; r < n; r++) {
    if (ru->color(r, n) != color)
      continue;
    int k = ru->key(r, n) < 0 ? r : ru->key(r, n), j = m++;
    /* insertion sort by key; equal keys stay in parent order */
    while (j > 0 && (ru->key(out[j - 1], n) < 0 ? out[j - 1]
                                                : ru->key(out[j - 1], n)) > k) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = r;
  }
  return m;
}

/* ---- checks inside one subgroup ---------------------------------------- */

static void check_order(tally *t, dc_group *sub, const char *name,
                        const int *members, int m) {
  int32_t mine = t->rank, got[MAXR];
  dc_status st = dc_all_gather(sub, &mine, got, 1, DC_INT32);
  check(t, st == DC_OK, "%s: all_gather: %s %s", name, dc_status_name(st),
        dc_group_last_error(sub));
  int same = st == DC_OK;
  for (int i = 0; same && i < m; i++)
    same = got[i] == members[i];
  check(t, same, "%s: members in the wrong order (first: %d, want %d)", name,
        got[0], members[0]);
}

static void check_sum(tally *t, dc_group *sub, const char *name,
                      const int *members, int m) {
  int64_t v[2] = {t->rank + 1, 1}, want = 0;
  for (int i = 0; i < m; i++)
    want += members[i] + 1;
  dc_status st = dc_all_sum(sub, v, v, 2, DC_INT64);
  check(t, st == DC_OK && v[0] == want && v[1] == m,
        "%s: all_sum gave %s %lld %lld, want %lld %d", name, dc_status_name(st),
        (long long)v[0], (long long)v[1], (long long)want, m);
}

/* Sub-rank 0 sends its parent rank to the last sub-rank. */
static void check_p2p(tally *t, dc_group *sub, const char *name,
                      const int *members, int m) {
  int me = dc_group_rank(sub);
  int32_t v = t->rank;
  if (m < 2 || (me != 0 && me != m - 1))
    return;
  dc_status st = me == 0 ? dc_send(sub, &v, 1, DC_INT32, m - 1)
                         : dc_recv(sub, &v, 1, DC_INT32, 0);
  check(t, st == DC_OK && v == members[0],
        "%s: send/recv gave %s value %d, want %d", name, dc_status_name(st), v,
        members[0]);
}

static void run_rule(tally *t, dc_group *world, const rule *ru) {
  int n = dc_group_size(world), members[MAXR];
  int m = expected_members(ru, t->rank, n, members);
  dc_group *sub = NULL;
  dc_status st =
      dc_group_split(world, ru->color(t->rank, n), ru->key(t->rank, n), &sub);
  check(t, st == DC_OK, "%s: split returned %s: %s", ru->name,
        dc_status_name(st), dc_group_last_error(world));
  if (ru->color(t->rank, n) == DC_UNDEFINED) {
    check(t, sub == NULL, "%s: DC_UNDEFINED gave a group", ru->name);
    return;
  }
  if (!sub)
    return;
  int want_rank = 0;
  while (members[want_rank] != t->rank)
    want_rank++;
  check(t, dc_group_size(sub) == m && dc_group_rank(sub) == want_rank,
        "%s: rank %d size %d, want rank %d size %d", ru->name,
        dc_group_rank(sub), dc_group_size(sub), want_rank, m);
  check_order(t, sub, ru->name, members, m);
  check_sum(t, sub, ru->name, members, m);
  check_p2p(t, sub, ru->name, members, m);
  dc_group_free(sub);
}

/* ---- two subgroups from two threads ------------------------------------ */

typedef struct worker {
  tally *t;
  dc_group *g;
  const char *name;
  int members[MAXR], m;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  float *buf = mp_alloc(THREAD_COUNT * sizeof *buf);
  float base = 0;
  for (int i = 0; i < w->m; i++)
    base += (float)w->members[i];
  for (int it = 0; it < THREAD_ITERS; it++) {
    for (int i = 0; i < THREAD_COUNT; i++)
      buf[i] = (float)(w->t->rank + it + (i & 7));
    dc_status st = dc_all_sum(w->g, buf, buf, THREAD_COUNT, DC_FLOAT32);
    int ok = st == DC_OK;
    for (int i = 0; ok && i < THREAD_COUNT; i++)
      ok = buf[i] == base + (float)(w->m * (it + (i & 7)));
    check(w->t, ok, "%s thread: iteration %d: %s %s", w->name, it,
          dc_status_name(st), dc_group_last_error(w->g));
    if (!ok)
      break;
  }
  free(buf);
  return NULL;
}

static dc_group *split_for(tally *t, dc_group *world, const rule *ru,
                           worker *w) {
  int n = dc_group_size(world);
  w->t = t;
  w->name = ru->name;
  w->m = expected_members(ru, t->rank, n, w->members);
  dc_status st = dc_group_split(world, ru->color(t->rank, n), -1, &w->g);
  check(t, st == DC_OK && w->g, "%s: split for threads: %s", ru->name,
        dc_status_name(st));
  return w->g;
}

/* One group per thread; then free the world before the last subgroup and
 * check that subgroup still works. */
static void run_threads(tally *t, dc_group *world) {
  worker w[2];
  if (!split_for(t, world, &rules[0], &w[0]) ||
      !split_for(t, world, &rules[1], &w[1]))
    return;
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, work, &w[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  dc_group_free(w[0].g);
  dc_group_free(world);
  dc_status st = dc_barrier(w[1].g);
  check(t, st == DC_OK, "barrier on a subgroup after freeing the world: %s %s",
        dc_status_name(st), dc_group_last_error(w[1].g));
  dc_group_free(w[1].g);
}

/* A split of a split: parity, then reversed inside it. */
static void run_nested(tally *t, dc_group *world) {
  dc_group *a = NULL, *b = NULL;
  int n = dc_group_size(world);
  dc_status st = dc_group_split(world, t->rank % 2, -1, &a);
  if (st == DC_OK)
    st = dc_group_split(a, 0, dc_group_size(a) - dc_group_rank(a), &b);
  check(t, st == DC_OK, "nested split: %s", dc_status_name(st));
  if (b) {
    int m = (n - t->rank % 2 + 1) / 2, members[MAXR];
    for (int i = 0; i < m; i++) /* same parity, descending */
      members[i] = t->rank % 2 + 2 * (m - 1 - i);
    check_order(t, b, "nested", members, m);
    check_sum(t, b, "nested", members, m);
  }
  dc_group_free(b);
  dc_group_free(a);
}

int main(void) {
  dc_group *world = mp_init_or_die("split_test");
  tally t = {dc_group_rank(world), 0, 0, PTHREAD_MUTEX_INITIALIZER};
  int n = dc_group_size(world);
  if (n > MAXR || n < 2) {
    printf("split_test: needs 2..%d ranks, got %d\n", MAXR, n);
    return 1;
  }
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    run_rule(&t, world, &rules[i]);
  run_nested(&t, world);
  run_threads(&t, world); /* frees the world */
  printf("rank %d/%d: split: %ld checks passed, %ld failed\n", t.rank, n,
         t.pass, t.fail);
  return t.fail || t.pass < 20 ? 1 : 0;
}
