/* Unit tests of the choice between single copy and the pipes
 * (src/algo/tune.c): the shared exploration schedule, voting for the
 * faster path, robustness to one noisy sample, following a machine that
 * changes, the forced modes of DISTCOMM_CMA, and for collectives a
 * schedule every rank runs alike, voting only at decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "algo/tune.h"

#define MIB (1u << 20)

static dc_tune *fresh(dc_tune_mode mode) {
  dc_tune *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->mode = mode;
  return t;
}

/* One call as select.c makes it: vote, then record what the path took. */
static int call(dc_tune *t, dc_tune_kind k, size_t bytes, double pull_s,
                double pipes_s) {
  int v = dc_tune_vote(t, k, bytes);
  dc_tune_record(t, k, bytes, v, v ? pull_s : pipes_s);
  return v;
}

static void forced_modes_never_measure(void **state) {
  (void)state;
  dc_tune *pull = fresh(DC_TUNE_PULL), *pipes = fresh(DC_TUNE_PIPES);
  for (int i = 0; i < 200; i++) {
    assert_int_equal(call(pull, DC_TUNE_ALL_REDUCE, MIB, 9.0, 1.0), 1);
    assert_int_equal(call(pipes, DC_TUNE_ALL_REDUCE, MIB, 1.0, 9.0), 0);
  }
  free(pull);
  free(pipes);
}

static void explores_both_first(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  int want[DC_TUNE_EXPLORE] = {1, 1, 0, 0}; /* a burst of each */
  for (int i = 0; i < DC_TUNE_EXPLORE; i++)
    assert_int_equal(call(t, DC_TUNE_ALL_GATHER, MIB, 1.0, 2.0), want[i]);
  free(t);
}

/* The faster path wins every call, except a burst of the other path per
 * DC_TUNE_RETRY calls. */
static void votes_for_the_faster(void **state) {
  (void)state;
  for (int pull_wins = 0; pull_wins < 2; pull_wins++) {
    dc_tune *t = fresh(DC_TUNE_AUTO);
    double pull = pull_wins ? 1e-4 : 2e-4, pipes = pull_wins ? 2e-4 : 1e-4;
    int other = 0;
    for (int i = 0; i < 10 * DC_TUNE_RETRY; i++) {
      int v = call(t, DC_TUNE_ALL_REDUCE, 3 * MIB, pull, pipes);
      if (i >= DC_TUNE_EXPLORE)
        other += v != pull_wins;
    }
    assert_int_equal(other, 9 * DC_TUNE_BURST); /* calls 64, 65, ... 577 */
    free(t);
  }
}

static void one_slow_sample_does_not_flip(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  for (int i = 0; i < 20; i++)
    call(t, DC_TUNE_REDUCE_SCATTER, MIB, 1e-4, 2e-4);
  /* the host stalls once while single copy runs */
  dc_tune_record(t, DC_TUNE_REDUCE_SCATTER, MIB, 1, 5e-3);
  for (int i = 0; i < 20; i++)
    assert_int_equal(call(t, DC_TUNE_REDUCE_SCATTER, MIB, 1e-4, 2e-4), 1);
  free(t);
}

/* Single copy becomes slow for good (another placement of the cores):
 * once its kept samples are all slow, the pipes win. */
static void follows_a_changed_machine(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  for (int i = 0; i < 20; i++)
    call(t, DC_TUNE_ALL_REDUCE, MIB, 1e-4, 2e-4);
  int last = 1;
  for (int i = 0; i < DC_TUNE_SAMPLES + 2; i++)
    last = call(t, DC_TUNE_ALL_REDUCE, MIB, 4e-4, 2e-4);
  assert_int_equal(last, 0);
  free(t);
}

/* Each path's first call after the other's is slow (cold caches and page
 * tables): single tries of the resting path only ever saw that cold call,
 * so the path in use kept winning by the switch's cost alone. Pipes win
 * at first; then single copy becomes faster warm (0.6 against 1.0), but
 * its cold call (1.6) is slower than the pipes: the burst's warm call
 * shows it, and single copy wins from the next retry on. */
static void a_cold_first_call_does_not_hide_a_path(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  int last = -1, pulls = 0;
  double pull = 2e-4, pipes = 1e-4, cold = 1e-4;
  for (int i = 0; i < 6 * DC_TUNE_RETRY; i++) {
    if (i == 2 * DC_TUNE_RETRY + 7)
      pull = 0.6e-4; /* the machine changes */
    int v = dc_tune_vote(t, DC_TUNE_ALL_REDUCE, MIB);
    double s = (v ? pull : pipes) + (v != last ? cold : 0);
    dc_tune_record(t, DC_TUNE_ALL_REDUCE, MIB, v, s);
    last = v;
    pulls += i >= 4 * DC_TUNE_RETRY && v;
  }
  /* from call 192 on single copy wins, but for the pipes' bursts */
  assert_int_equal(pulls, 2 * DC_TUNE_RETRY - 2 * DC_TUNE_BURST);
  free(t);
}

/* Sizes are told apart by powers of two, and ops apart. */
static void classes_are_separate(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  for (int i = 0; i < 20; i++) {
    call(t, DC_TUNE_ALL_REDUCE, MIB, 1e-4, 2e-4);      /* pull wins */
    call(t, DC_TUNE_ALL_REDUCE, 64 * MIB, 9e-2, 3e-2); /* pipes win */
    call(t, DC_TUNE_ALL_GATHER, MIB, 3e-4, 1e-4);      /* pipes win */
  }
  assert_int_equal(dc_tune_vote(t, DC_TUNE_ALL_REDUCE, MIB + 12345), 1);
  assert_int_equal(dc_tune_vote(t, DC_TUNE_ALL_REDUCE, 64 * MIB), 0);
  assert_int_equal(dc_tune_vote(t, DC_TUNE_ALL_GATHER, MIB), 0);
  free(t);
}

/* A path that never completes (single copy refused every time, e.g.
 * overlapping buffers) has no figures: the other is chosen, and the
 * refused one is still offered at the retries. */
static void a_path_without_figures(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  int offered = 0;
  for (int i = 0; i < 3 * DC_TUNE_RETRY; i++) {
    int v = dc_tune_vote(t, DC_TUNE_ALL_GATHER, MIB);
    offered += v && i >= DC_TUNE_EXPLORE;
    dc_tune_record(t, DC_TUNE_ALL_GATHER, MIB, 0, 1e-4); /* ran the pipes */
  }
  assert_int_equal(offered, 2 * DC_TUNE_BURST); /* calls 64, 65, 128, 129 */
  free(t);
}

/* ---- collectives: the group's schedule (dc_tune_collective) ----------- */

/* One collective call on a group of ranks, as select.c's pull_or runs it:
 * single copy's round runs on a rank unless its plan is GO_PIPES; every
 * rank must agree on that, or one would wait for a round the other never
 * sends. The round pulls when every rank votes for it and can pull. */
static int group_call(dc_tune **t, const int *can_pull, int n, size_t bytes,
                      double pull_s, double pipes_s) {
  dc_tune_plan plan[8];
  int round = -1, pulled = 1;
  for (int r = 0; r < n; r++) {
    plan[r] = dc_tune_collective(t[r], DC_TUNE_ALL_GATHER, bytes);
    int mine = plan[r] != DC_TUNE_GO_PIPES;
    if (round < 0)
      round = mine;
    assert_int_equal(mine, round); /* all ranks alike, or a hang */
    pulled &= plan[r] != DC_TUNE_VOTE_PIPES && can_pull[r];
  }
  pulled &= round;
  for (int r = 0; r < n; r++) {
    if (plan[r] == DC_TUNE_VOTE_PIPES || plan[r] == DC_TUNE_VOTE_PULL)
      dc_tune_agreed(t[r], DC_TUNE_ALL_GATHER, bytes, pulled);
    dc_tune_record(t[r], DC_TUNE_ALL_GATHER, bytes, pulled,
                   pulled ? pull_s : pipes_s);
  }
  return pulled;
}

/* Exploration, then a decision, then the agreed path without votes but for
 * a burst of the other per DC_TUNE_RETRY calls and a decision after it. */
static void collectives_vote_only_at_decisions(void **state) {
  (void)state;
  dc_tune *t = fresh(DC_TUNE_AUTO);
  const int can[1] = {1};
  int votes = 0, pulls = 0;
  for (int i = 0; i < 3 * DC_TUNE_RETRY; i++) {
    unsigned before = t->cls[DC_TUNE_ALL_GATHER][15].calls;
    dc_tune_plan p = dc_tune_collective(t, DC_TUNE_ALL_GATHER, 32 * 1024);
    t->cls[DC_TUNE_ALL_GATHER][15].calls = before; /* peeked: call again */
    votes += p == DC_TUNE_VOTE_PIPES || p == DC_TUNE_VOTE_PULL;
    if (i < DC_TUNE_EXPLORE)
      assert_int_equal(p,
                       i < DC_TUNE_BURST ? DC_TUNE_GO_PULL : DC_TUNE_GO_PIPES);
    pulls += group_call(&t, can, 1, 32 * 1024, 2e-6, 1e-6); /* pipes win */
  }
  /* calls 4, 66 and 130 decide; 64, 65, 128, 129 try single copy again */
  assert_int_equal(votes, 3);
  assert_int_equal(pulls, DC_TUNE_BURST + 2 * DC_TUNE_BURST);
  free(t);
}

/* A rank that cannot pull (its tuner always agrees on the pipes) runs the
 * same schedule as ranks that can, and single copy wins where all can. */
static void ranks_agree_when_one_cannot_pull(void **state) {
  (void)state;
  for (int one_cannot = 0; one_cannot < 2; one_cannot++) {
    dc_tune *t[3] = {fresh(DC_TUNE_AUTO), fresh(DC_TUNE_AUTO),
                     fresh(DC_TUNE_AUTO)};
    const int can[3] = {1, !one_cannot, 1};
    int pulls = 0;
    for (int i = 0; i < 4 * DC_TUNE_RETRY; i++)
      pulls += group_call(t, can, 3, MIB, 1e-4, 3e-4); /* pull wins */
    if (one_cannot)
      assert_int_equal(pulls, 0);
    else /* all but the explored pipes and the pipes' bursts */
      assert_int_equal(pulls,
                       4 * DC_TUNE_RETRY - DC_TUNE_BURST - 3 * DC_TUNE_BURST);
    for (int r = 0; r < 3; r++)
      free(t[r]);
  }
}

/* The machine changes (another placement of the cores): the next decision
 * after a burst follows it. */
static void collectives_follow_a_changed_machine(void **state) {
  (void)state;
  dc_tune *t[2] = {fresh(DC_TUNE_AUTO), fresh(DC_TUNE_AUTO)};
  const int can[2] = {1, 1};
  int late = 0;
  for (int i = 0; i < 2 * DC_TUNE_RETRY; i++)
    group_call(t, can, 2, MIB, 3e-4, 1e-4); /* pipes win */
  for (int i = 0; i < 2 * DC_TUNE_RETRY; i++)
    late += group_call(t, can, 2, MIB, 1e-4, 3e-4); /* now pull wins */
  assert_true(late >= DC_TUNE_RETRY); /* from the next decision on */
  free(t[0]);
  free(t[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(forced_modes_never_measure),
      cmocka_unit_test(explores_both_first),
      cmocka_unit_test(votes_for_the_faster),
      cmocka_unit_test(one_slow_sample_does_not_flip),
      cmocka_unit_test(follows_a_changed_machine),
      cmocka_unit_test(a_cold_first_call_does_not_hide_a_path),
      cmocka_unit_test(classes_are_separate),
      cmocka_unit_test(a_path_without_figures),
      cmocka_unit_test(collectives_vote_only_at_decisions),
      cmocka_unit_test(ranks_agree_when_one_cannot_pull),
      cmocka_unit_test(collectives_follow_a_changed_machine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
