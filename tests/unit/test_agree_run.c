/* Unit tests of the agreement's rounds over sockets (dc_agree_run in
 * src/core/agree.c): one thread per rank, a socketpair per pair of ranks.
 * A rank killed is one whose sockets close (before the rounds, or after
 * sending to some peers); a stopped rank is a thread that sleeps past the
 * timeout. The survivors must decide one membership, fast when the lost
 * rank's sockets close and within the timeout (+1 s, the goal of issue 37) when
 * it is silent; the times are printed. With the job token, a vote forged,
 * altered or replayed is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/agree.h"
#include "transport/auth.h"

#define N 5

typedef struct rank_ctx {
  int me, n, skip; /* skip: the test plays this rank itself */
  int fds[N];
  double timeout, sleep_s, took;
  const dc_agree_seal *seal; /* NULL: no MACs */
  dc_agree a;
  dc_status st;
  int rounds;
  char why[160];
} rank_ctx;

static void *rank_main(void *arg) {
  rank_ctx *c = arg;
  if (c->sleep_s > 0)
    usleep((useconds_t)(c->sleep_s * 1e6));
  double t0 = dc_now();
  c->st = dc_agree_run(&c->a, c->fds, c->seal, c->timeout, &c->rounds, c->why,
                       sizeof c->why);
  c->took = dc_now() - t0;
  return NULL;
}

static void wire(rank_ctx *r, int n, double timeout) {
  memset(r, 0, sizeof *r * N);
  for (int i = 0; i < n; i++) {
    r[i].me = i;
    r[i].n = n;
    r[i].timeout = timeout;
    r[i].fds[i] = -1;
    assert_int_equal(dc_agree_init(&r[i].a, n, i), DC_OK);
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      int sv[2];
      assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
      r[i].fds[j] = sv[0];
      r[j].fds[i] = sv[1];
    }
}

static void kill_rank(rank_ctx *r, int x) {
  for (int p = 0; p < r[x].n; p++)
    if (r[x].fds[p] >= 0) {
      close(r[x].fds[p]);
      r[x].fds[p] = -1;
    }
}

static void run_all(rank_ctx *r, int n) {
  pthread_t th[N];
  for (int i = 0; i < n; i++)
    if (!r[i].skip)
      assert_int_equal(pthread_create(&th[i], NULL, rank_main, &r[i]), 0);
  for (int i = 0; i < n; i++)
    if (!r[i].skip)
      pthread_join(th[i], NULL);
}

static void finish(rank_ctx *r, int n) {
  for (int i = 0; i < n; i++) {
    kill_rank(r, i);
    dc_agree_free(&r[i].a);
  }
}

/* The survivors (not skipped, not in `out`) decided the same members;
 * returns how many, and the slowest one's time in *took. */
static int agreed(rank_ctx *r, int n, int out, double *took) {
  int ref[N], k0 = -1;
  *took = 0;
  for (int i = 0; i < n; i++) {
    if (r[i].skip || i == out)
      continue;
    assert_int_equal(r[i].st, DC_OK);
    int ranks[N], me = -1, k = dc_agree_members(&r[i].a, ranks, &me);
    assert_int_equal(ranks[me], i);
    if (k0 < 0) {
      k0 = k;
      memcpy(ref, ranks, sizeof ranks);
    }
    assert_int_equal(k, k0);
    assert_memory_equal(ranks, ref, (size_t)k * sizeof *ranks);
    *took = r[i].took > *took ? r[i].took : *took;
  }
  return k0;
}

static void healthy_group_keeps_everyone(void **state) {
  (void)state;
  rank_ctx r[N];
  wire(r, N, 5.0);
  run_all(r, N);
  double took;
  assert_int_equal(agreed(r, N, -1, &took), N);
  assert_int_equal(r[0].rounds, 1);
  finish(r, N);
}

/* Rank 2 killed before the rounds: its sockets close; nobody knew. */
static void killed_rank_is_left_out_fast(void **state) {
  (void)state;
  rank_ctx r[N];
  wire(r, N, 5.0);
  r[2].skip = 1;
  kill_rank(r, 2);
  run_all(r, N);
  double took;
  assert_int_equal(agreed(r, N, 2, &took), N - 1);
  printf("agreement after a kill (sockets closed), %d ranks: %.2f ms\n", N,
         took * 1e3);
  assert_true(took < 1.0);
  finish(r, N);
}

/* Rank 2 killed halfway through round 0: 0 and 1 heard it, 3 and 4 see
 * its sockets close. Whatever they decide, they decide it together. */
static void killed_during_a_round(void **state) {
  (void)state;
  rank_ctx r[N];
  wire(r, N, 5.0);
  r[2].skip = 1;
  unsigned char m[64];
  size_t len = dc_agree_msg_bytes(N);
  dc_agree_encode(&r[2].a, m);
  for (int p = 0; p < 2; p++)
    assert_int_equal(write(r[2].fds[p], m, len), (ssize_t)len);
  kill_rank(r, 2);
  run_all(r, N);
  double took;
  int k = agreed(r, N, 2, &took);
  assert_true(k == N || k == N - 1);
  assert_true(took < 1.0);
  finish(r, N);
}

/* Rank 3 stopped for 1 s, timeout 0.3 s: the others leave it out after
 * the timeout. When it wakes it does not end in their group. */
static void stopped_rank_is_left_out_after_timeout(void **state) {
  (void)state;
  rank_ctx r[N];
  wire(r, N, 0.3);
  r[3].sleep_s = 1.0;
  run_all(r, N);
  double took;
  assert_int_equal(agreed(r, N, 3, &took), N - 1);
  printf("agreement with a stopped rank, timeout 0.3 s: %.3f s\n", took);
  assert_true(took >= 0.3 && took < 0.3 + 1.0);
  int ranks[N], me;
  assert_true(r[3].st == DC_ERR_ABORTED ||
              dc_agree_members(&r[3].a, ranks, &me) != N - 1);
  finish(r, N);
}

/* What a member reads next from peer p (dc_group_shrink's addresses)
 * follows p's decided message: skip to it unless the rounds read it. */
static void read_past_decision(rank_ctx *c, int p, char next[4]) {
  size_t len = dc_agree_msg_bytes(c->n);
  unsigned char m[64];
  int same = dc_agree_told(&c->a, p);
  char why[160];
  while (!same) {
    assert_int_equal(read(c->fds[p], m, len), (ssize_t)len);
    assert_int_equal(
        dc_agree_decision(&c->a, p, m, len, &same, why, sizeof why), DC_OK);
  }
  assert_int_equal(read(c->fds[p], next, 4), 4);
}

/* Rank 1 killed halfway: after deciding, every survivor sends "NEXT" to
 * every other, and each reads it right after the agreement's messages. */
static void next_bytes_follow_the_decision(void **state) {
  (void)state;
  rank_ctx r[N];
  wire(r, N, 5.0);
  kill_rank(r, 1);
  r[1].skip = 1;
  run_all(r, N);
  double took;
  assert_int_equal(agreed(r, N, 1, &took), N - 1);
  for (int i = 0; i < N; i++)
    for (int p = 0; i != 1 && p < N; p++)
      if (p != i && p != 1)
        assert_int_equal(write(r[i].fds[p], "NEXT", 4), 4);
  for (int i = 0; i < N; i++)
    for (int p = 0; i != 1 && p < N; p++) {
      char next[4];
      if (p == i || p == 1)
        continue;
      read_past_decision(&r[i], p, next);
      assert_memory_equal(next, "NEXT", 4);
    }
  /* a decided message naming other members is refused */
  unsigned char m[64];
  char why[160];
  int same = 1;
  dc_agree other;
  assert_int_equal(dc_agree_init(&other, N, 3), DC_OK);
  other.decided = 1;
  dc_agree_encode(&other, m);
  assert_int_equal(dc_agree_decision(&r[0].a, 3, m, dc_agree_msg_bytes(N),
                                     &same, why, sizeof why),
                   DC_ERR_MISMATCH);
  assert_int_equal(same, 0);
  assert_non_null(strstr(why, "rank 3"));
  dc_agree_free(&other);
  finish(r, N);
}

/* With the job token every vote carries a MAC (issue 37). Rank 3 is played
 * by the test: its vote sealed as `how` says goes to ranks 0 to 2. */
enum { GOOD, FORGED, ALTERED, REPLAYED, OTHER_MEETING };

static void sealed_vote(int how) {
  dc_auth auth, stranger;
  char why[160];
  assert_int_equal(dc_auth_from_token("a job token of 37 chars, for tests",
                                      &auth, why, sizeof why),
                   DC_OK);
  assert_int_equal(dc_auth_from_token("another job's token, not this one",
                                      &stranger, why, sizeof why),
                   DC_OK);
  unsigned char nonces[4 * DC_AUTH_NONCE_BYTES], other[4 * DC_AUTH_NONCE_BYTES];
  for (size_t i = 0; i < sizeof nonces; i++) {
    nonces[i] = (unsigned char)(i * 7 + 1);
    other[i] = (unsigned char)(i * 7 + 2);
  }
  dc_agree_seal seal = {
      .auth = &auth, .group = 77, .phase = 1, .nonces = nonces};
  dc_agree_seal sent = seal;
  sent.auth = how == FORGED ? &stranger : &auth;
  sent.phase = how == REPLAYED ? 0 : 1; /* the last agreement's vote */
  sent.nonces = how == OTHER_MEETING ? other : nonces;
  rank_ctx r[N];
  wire(r, 4, 5.0);
  for (int i = 0; i < 4; i++)
    r[i].seal = &seal;
  r[3].skip = 1;
  size_t len = dc_agree_msg_bytes(4), wire_len = dc_agree_wire_bytes(4, &seal);
  assert_int_equal(wire_len, len + DC_AUTH_PROOF_BYTES);
  unsigned char w[128];
  if (how != GOOD && how != ALTERED)
    dc_agree_suspect(&r[3].a, 0); /* the forged vote: rank 0 is lost */
  dc_agree_encode(&r[3].a, w);
  for (int p = 0; p < 3; p++) {
    dc_agree_seal_msg(&sent, 3, p, w, len, w + len);
    if (how == ALTERED)
      w[16] = 0x01; /* now it says rank 0 is lost */
    assert_int_equal(write(r[3].fds[p], w, wire_len), (ssize_t)wire_len);
    w[16] = 0;
  }
  run_all(r, 4);
  for (int i = 0; i < 3; i++) {
    if (how == GOOD) {
      assert_int_equal(r[i].st, DC_OK);
      int ranks[N], me;
      assert_int_equal(dc_agree_members(&r[i].a, ranks, &me), 4);
      continue;
    }
    assert_int_equal(r[i].st, DC_ERR_AUTH);
    assert_non_null(strstr(r[i].why, "rank 3's agreement message fails the "
                                     "job token's MAC"));
  }
  finish(r, 4);
}

static void sealed_votes(void **state) {
  (void)state;
  sealed_vote(GOOD);
  sealed_vote(FORGED);
  sealed_vote(ALTERED);
  sealed_vote(REPLAYED);
  sealed_vote(OTHER_MEETING);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(healthy_group_keeps_everyone),
      cmocka_unit_test(killed_rank_is_left_out_fast),
      cmocka_unit_test(killed_during_a_round),
      cmocka_unit_test(stopped_rank_is_left_out_after_timeout),
      cmocka_unit_test(next_bytes_follow_the_decision),
      cmocka_unit_test(sealed_votes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
