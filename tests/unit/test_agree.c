/* Unit tests of the survivors' agreement (src/core/agree.c): ranks run its
 * rounds over simulated connections (a queue per ordered pair) while ranks
 * die before it, between rounds or halfway through sending a round, or
 * stay silent. Every rank alive must decide one and the same membership,
 * holding every rank alive and none dead before it started, within f + 2
 * rounds for f deaths; bad messages are refused naming the sender. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/agree.h"

#define N 8
#define QMAX 16
#define MSG 24 /* dc_agree_msg_bytes(n) for n <= 64 */

typedef struct {
  unsigned char m[QMAX][MSG];
  int head, tail;
} queue;

typedef struct {
  int n;
  dc_agree a[N];
  queue q[N][N]; /* q[from][to] */
  int dead[N];   /* 1: dead (its connections closed) */
  int silent[N]; /* alive but sends nothing: suspected by timeout */
  int done[N];   /* decided and sent the decision */
  int crash_round[N], crash_sends[N]; /* -1: never */
  dc_status st[N];
  int rounds, timeouts;
} sim;

static void push(sim *s, int from, int to, const unsigned char *m) {
  queue *q = &s->q[from][to];
  assert_true(q->tail < QMAX);
  memcpy(q->m[q->tail++], m, MSG);
}

static int active(const sim *s, int i) {
  return !s->dead[i] && !s->silent[i] && !s->done[i] && s->st[i] == DC_OK;
}

/* Round start: every rank sends; a decided one sends its decision to all
 * it can reach (suspects too: a stopped rank learns it was left out). */
static void send_phase(sim *s, int r) {
  for (int i = 0; i < s->n; i++) {
    if (!active(s, i))
      continue;
    unsigned char m[MSG];
    dc_agree_encode(&s->a[i], m);
    int decided = s->a[i].decided, sent = 0;
    for (int p = 0; p < s->n; p++) {
      if (p == i || (!decided && !dc_agree_talks_to(&s->a[i], p)))
        continue;
      if (s->crash_round[i] == r && sent == s->crash_sends[i])
        break;
      push(s, i, p, m);
      sent++;
    }
    if (s->crash_round[i] == r)
      s->dead[i] = 1;
    if (decided)
      s->done[i] = 1;
  }
}

/* One message from peer p to rank i, or the failure detector. */
static void read_one(sim *s, int i, int p) {
  queue *q = &s->q[p][i];
  if (q->head < q->tail) {
    char why[160];
    s->st[i] =
        dc_agree_receive(&s->a[i], p, q->m[q->head++], MSG, why, sizeof why);
    return;
  }
  if (!s->dead[p] && !s->done[p])
    s->timeouts++; /* alive, said nothing: silent past the timeout */
  dc_agree_suspect(&s->a[i], p);
}

static void read_phase(sim *s) {
  for (int i = 0; i < s->n; i++) {
    if (!active(s, i) || s->a[i].decided)
      continue;
    for (int p = 0; p < s->n && s->st[i] == DC_OK; p++)
      if (dc_agree_talks_to(&s->a[i], p))
        read_one(s, i, p);
    if (s->st[i] == DC_OK)
      dc_agree_end_round(&s->a[i]);
  }
}

static void run(sim *s) {
  for (int r = 0; r < 3 * N; r++) {
    int any = 0;
    for (int i = 0; i < s->n; i++)
      any |= active(s, i);
    if (!any)
      return;
    send_phase(s, r);
    read_phase(s);
    s->rounds = r + 1;
  }
  fail_msg("the agreement did not end in %d rounds", 3 * N);
}

static void setup(sim *s, int n) {
  memset(s, 0, sizeof *s);
  s->n = n;
  for (int i = 0; i < n; i++) {
    assert_int_equal(dc_agree_init(&s->a[i], n, i), DC_OK);
    s->crash_round[i] = -1;
  }
}

static void teardown(sim *s) {
  for (int i = 0; i < s->n; i++)
    dc_agree_free(&s->a[i]);
}

/* Every survivor decided the same members (all alive, none dead at start)
 * and the same veto. */
static void check_agreed(sim *s, const int *dead_at_start) {
  int ref[N], nref = -1, veto = -1;
  for (int i = 0; i < s->n; i++) {
    if (s->dead[i] || s->silent[i])
      continue;
    assert_int_equal(s->st[i], DC_OK);
    assert_true(s->a[i].decided);
    int ranks[N], me = -1, k = dc_agree_members(&s->a[i], ranks, &me);
    assert_true(me >= 0 && me < k && ranks[me] == i);
    if (nref < 0) {
      nref = k;
      memcpy(ref, ranks, sizeof ranks);
    }
    assert_int_equal(k, nref);
    assert_memory_equal(ranks, ref, (size_t)k * sizeof *ranks);
    if (veto < 0)
      veto = s->a[i].veto;
    assert_int_equal(s->a[i].veto, veto);
  }
  for (int j = 0; nref > 0 && j < nref; j++)
    assert_false(dead_at_start[ref[j]]);
  for (int i = 0; i < s->n; i++) {
    int in = 0;
    for (int j = 0; j < nref; j++)
      in |= ref[j] == i;
    if (!s->dead[i] && !s->silent[i])
      assert_true(in);
  }
}

/* Nobody lost: one round, everyone keeps its rank. */
static void healthy_group_decides_in_one_round(void **state) {
  (void)state;
  sim s;
  setup(&s, 5);
  int none[N] = {0};
  run(&s);
  check_agreed(&s, none);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[3], ranks, &me), 5);
  assert_int_equal(me, 3);
  assert_int_equal(s.rounds, 2); /* the decision, then its relay */
  teardown(&s);
}

/* Rank 1 died before; only rank 0 knew (the others find out by reading). */
static void lost_before_known_to_one(void **state) {
  (void)state;
  sim s;
  setup(&s, 4);
  int dead0[N] = {0, 1};
  s.dead[1] = 1;
  dc_agree_suspect(&s.a[0], 1);
  run(&s);
  check_agreed(&s, dead0);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[3], ranks, &me), 3);
  assert_int_equal(me, 2);
  assert_int_equal(s.timeouts, 0);
  teardown(&s);
}

/* Rank 2 dies halfway through sending round 0: ranks 0 and 1 heard it and
 * decide with it at once; 3 and 4 suspect it, then take that decision. All
 * agree on 5 members, one dead: the group built on them fails naming rank
 * 2, and the survivors shrink again, from a set where 2 is known lost. */
static void death_during_a_round(void **state) {
  (void)state;
  sim s;
  setup(&s, 5);
  int none[N] = {0};
  s.crash_round[2] = 0;
  s.crash_sends[2] = 2;
  run(&s);
  check_agreed(&s, none);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[4], ranks, &me), 5);
  assert_int_equal(s.rounds, 3);
  teardown(&s);
  /* The second shrink: every survivor knows 2 is gone. */
  setup(&s, 5);
  s.dead[2] = 1;
  int dead2[N] = {0, 0, 1};
  for (int i = 0; i < 5; i++)
    dc_agree_suspect(&s.a[i], 2);
  run(&s);
  check_agreed(&s, dead2);
  assert_int_equal(dc_agree_members(&s.a[4], ranks, &me), 4);
  assert_int_equal(me, 3);
  teardown(&s);
}

/* Rank 2 dies in round 0 before sending: nobody heard it. */
static void death_before_sending(void **state) {
  (void)state;
  sim s;
  setup(&s, 5);
  int none[N] = {0};
  s.crash_round[2] = 0;
  s.crash_sends[2] = 0;
  run(&s);
  check_agreed(&s, none);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[0], ranks, &me), 4);
  teardown(&s);
}

/* A stopped rank: the others suspect it after the timeout and decide
 * without it. When it wakes it reads their first round, which it takes for
 * agreement, and decides the old membership: a set nobody else holds, so
 * the group built on it (its id made from the members) cannot connect.
 * The detector is not perfect there; the membership of the others is. */
static void silent_rank_is_left_out(void **state) {
  (void)state;
  sim s;
  setup(&s, 4);
  int none[N] = {0};
  s.silent[3] = 1;
  run(&s);
  assert_true(s.timeouts >= 3);
  check_agreed(&s, none);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[0], ranks, &me), 3);
  s.silent[3] = 0; /* SIGCONT */
  run(&s);
  assert_int_equal(s.st[3], DC_OK);
  assert_int_equal(dc_agree_members(&s.a[3], ranks, &me), 4);
  teardown(&s);
}

/* A decision that names a rank tells it it was left out. */
static void decision_naming_me_aborts(void **state) {
  (void)state;
  sim s;
  setup(&s, 3);
  dc_agree_suspect(&s.a[0], 2);
  s.a[0].decided = 1;
  unsigned char m[MSG];
  dc_agree_encode(&s.a[0], m);
  char why[160] = "";
  assert_int_equal(dc_agree_receive(&s.a[2], 0, m, MSG, why, sizeof why),
                   DC_ERR_ABORTED);
  assert_non_null(strstr(why, "rank 0 and the others left this rank out"));
  assert_int_equal(dc_agree_receive(&s.a[1], 0, m, MSG, why, sizeof why),
                   DC_OK);
  assert_true(s.a[1].decided);
  assert_true(dc_agree_suspects(&s.a[1], 2));
  teardown(&s);
}

/* Random deaths (before, between and during rounds, also of deciders) on
 * 1 to 8 ranks: agreement, and f + 2 rounds (+1 for the last relay). */
static void random_deaths_agree(void **state) {
  (void)state;
  srand(37);
  for (int t = 0; t < 20000; t++) {
    sim s;
    int n = 1 + rand() % N, f = 0;
    setup(&s, n);
    int dead0[N] = {0};
    int vetoed = 0, any = 0; /* vetoed: by a rank alive to the end */
    for (int i = 0; i < n; i++) {
      int c = rand() % 4;
      if (rand() % 8 == 0) {
        dc_agree_veto(&s.a[i]);
        vetoed |= c > 1;
        any = 1;
      }
      if (c == 0 && f < n - 1) { /* dead before: some know it */
        s.dead[i] = dead0[i] = 1;
        for (int j = 0; j < n; j++)
          if (rand() % 2)
            dc_agree_suspect(&s.a[j], i);
        f++;
      } else if (c == 1 && f < n - 1) {
        s.crash_round[i] = rand() % 4;
        s.crash_sends[i] = rand() % n;
        f++;
      }
    }
    run(&s);
    check_agreed(&s, dead0);
    for (int i = 0; i < n; i++) {
      assert_true(s.dead[i] || !vetoed || s.a[i].veto);
      assert_true(any || !s.a[i].veto);
    }
    assert_int_equal(s.timeouts, 0);
    assert_true(s.rounds <= f + 3);
    teardown(&s);
  }
}

/* dc_group_shrink's second agreement: one member's set-up failed (a
 * veto); every rank decides the veto, with the same members. */
static void veto_reaches_everyone(void **state) {
  (void)state;
  sim s;
  setup(&s, 5);
  int none[N] = {0};
  dc_agree_veto(&s.a[3]);
  run(&s);
  check_agreed(&s, none);
  for (int i = 0; i < 5; i++)
    assert_int_equal(s.a[i].veto, 1);
  int ranks[N], me;
  assert_int_equal(dc_agree_members(&s.a[0], ranks, &me), 5);
  teardown(&s);
  setup(&s, 3); /* no veto: none decided */
  run(&s);
  for (int i = 0; i < 3; i++)
    assert_int_equal(s.a[i].veto, 0);
  teardown(&s);
}

static void bad_messages_are_refused(void **state) {
  (void)state;
  dc_agree a, b;
  assert_int_equal(dc_agree_init(&a, 70, 0), DC_OK);
  assert_int_equal(dc_agree_init(&b, 70, 5), DC_OK);
  size_t len = dc_agree_msg_bytes(70);
  assert_int_equal(len, 32);
  unsigned char m[32], c[32];
  dc_agree_encode(&b, m);
  char why[160] = "";
  assert_int_equal(dc_agree_receive(&a, 5, m, len - 1, why, sizeof why),
                   DC_ERR_MISMATCH);
  assert_non_null(strstr(why, "rank 5 sent a bad agreement message"));
  memcpy(c, m, len);
  c[0] = 'X';
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_MISMATCH);
  memcpy(c, m, len);
  c[8] = 3; /* round 3 while we are in round 0 */
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_MISMATCH);
  assert_non_null(strstr(why, "another round"));
  memcpy(c, m, len);
  c[16 + 8 + 7] = 0x80; /* rank 127 of a group of 70 */
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_MISMATCH);
  assert_non_null(strstr(why, "past the group's size"));
  memcpy(c, m, len);
  c[16] = 0x20; /* names its sender, rank 5 */
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_MISMATCH);
  memcpy(c, m, len);
  c[5] = 2; /* a veto is 0 or 1 */
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_MISMATCH);
  memcpy(c, m, len);
  c[16] = 0x01; /* names us, rank 0 */
  assert_int_equal(dc_agree_receive(&a, 5, c, len, why, sizeof why),
                   DC_ERR_ABORTED);
  assert_non_null(strstr(why, "left this rank out"));
  assert_int_equal(dc_agree_receive(&a, 5, m, len, why, sizeof why), DC_OK);
  dc_agree_free(&a);
  assert_int_equal(dc_agree_init(&a, 0, 0), DC_ERR_INVALID);
  assert_int_equal(dc_agree_init(&a, 3, 3), DC_ERR_INVALID);
  dc_agree_free(&a);
  dc_agree_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(healthy_group_decides_in_one_round),
      cmocka_unit_test(lost_before_known_to_one),
      cmocka_unit_test(death_during_a_round),
      cmocka_unit_test(death_before_sending),
      cmocka_unit_test(silent_rank_is_left_out),
      cmocka_unit_test(decision_naming_me_aborts),
      cmocka_unit_test(random_deaths_agree),
      cmocka_unit_test(veto_reaches_everyone),
      cmocka_unit_test(bad_messages_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
