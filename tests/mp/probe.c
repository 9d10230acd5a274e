/* probe: one rank's side of the error tests; the scripts read its lines.
 *
 *   probe init [--strict] [--backend B] [--retry] [--idle S]
 *       dc_init then a barrier. "OK rank R size S backend B", or one line
 *       "ERR <STATUS>: <detail>" and exit 3. --retry: after a failure, call
 *       dc_init again; it must fail the same way (else a "BUG" line). --idle:
 *       stay S seconds before freeing the group (its connections quiet).
 *   probe loop MIB ITERS [--die RANK:MS] [--linger S]
 *       all_sum of MIB MiB of float32, ITERS times. Prints "rank R ready pid P"
 *       after the first. On failure: "rank R: ERR <STATUS> at <wall>:
 * <detail>", then checks the group is poisoned and frees it; exit 4 (after
 *       sleeping S seconds, so a launcher reports the first failure first).
 *       --die: rank RANK SIGKILLs itself MS ms into the second all_sum.
 *   probe mismatch KIND COUNT [ODD]
 *       Rank ODD (default: the last) disagrees (KIND: count, dtype, op, root,
 *       coll, or p2p: on 2 ranks, 0 sends to 1 and ODD has one more). Exit 0
 * when this rank got an error, 1 when the call "succeeded", 7 when memory past
 * what this rank's own call may write was touched (a "CANARY" line). probe
 * invalid Argument errors on the world group (any size): each must fail locally
 * with DC_ERR_INVALID and leave the group usable. probe token Under the
 * launcher (which sets DISTCOMM_JOB_TOKEN): dc_init, then the token must be
 * gone from the environment (children inherit it) while split groups, which
 * prove it again, still work. "token OK rank R" or a "BUG" line and exit 1.
 *   probe occupy PORT SECONDS
 *       Listen on 127.0.0.1:PORT, print "listening PORT", sleep. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- init -------------------------------------------------------------- */

static int cmd_init(int argc, char **argv) {
  int strict = 0, retry = 0;
  double idle = 0;
  const char *backend = "any";
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--strict") == 0)
      strict = 1;
    else if (strcmp(argv[i], "--idle") == 0 && i + 1 < argc)
      idle = (double)mp_parse_size("--idle", argv[++i]);
    else if (strcmp(argv[i], "--retry") == 0)
      retry = 1;
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
      backend = argv[++i];
  }
  dc_group *g = NULL;
  dc_status st = dc_init(backend, strict, &g);
  if (st != DC_OK) {
    printf("ERR %s: %s\n", dc_status_name(st), dc_last_error());
    /* A second try must fail the same way, not hand out a broken group. */
    dc_status again = retry ? dc_init(backend, strict, &g) : st;
    if (again != st || g)
      printf("BUG: second dc_init returned %s\n", dc_status_name(again));
    return 3;
  }
  st = dc_barrier(g);
  if (st != DC_OK) {
    printf("ERR %s: %s\n", dc_status_name(st), dc_group_last_error(g));
    dc_group_free(g);
    return 3;
  }
  printf("OK rank %d size %d backend %s\n", dc_group_rank(g), dc_group_size(g),
         dc_group_backend(g));
  fflush(stdout);
  sleep_s(idle); /* connections open and quiet, for a look at them */
  dc_group_free(g);
  return 0;
}

/* ---- after a failure ---------------------------------------------------- */

/* The group must now be poisoned: the next call returns the first error at
 * once (< 1 s); freeing it must not hang (< 2 s). Prints what it saw; 0 when
 * all is well. */
static int check_poisoned(dc_group *g, dc_status first, void *buf,
                          size_t count) {
  int rank = dc_group_rank(g), bad = 0;
  double t0 = mp_mono();
  dc_status again = dc_all_sum(g, buf, buf, count, DC_FLOAT32);
  double dt = mp_mono() - t0;
  if (again != first || dt > 1.0) {
    printf("rank %d: POISON-FAIL next call gave %s after %.3f s\n", rank,
           dc_status_name(again), dt);
    bad = 1;
  } else {
    printf("rank %d: poisoned: next call gave %s after %.3f s\n", rank,
           dc_status_name(again), dt);
  }
  t0 = mp_mono();
  dc_group_free(g);
  dt = mp_mono() - t0;
  printf("rank %d: freed in %.3f s\n", rank, dt);
  fflush(stdout);
  return bad || dt > 2.0;
}

/* ---- loop --------------------------------------------------------------- */

static double die_after_ms;

static void *die_later(void *arg) {
  (void)arg;
  sleep_s(die_after_ms / 1000.0);
  kill(getpid(), SIGKILL);
  return NULL;
}

static int cmd_loop(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t count = mp_parse_size("MIB", argv[0]) * ((size_t)1 << 20) / 4;
  size_t iters = mp_parse_size("ITERS", argv[1]);
  int die_rank = -1;
  double linger = 0;
  for (int i = 2; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--die") == 0 &&
        sscanf(argv[i + 1], "%d:%lf", &die_rank, &die_after_ms) == 2)
      i++;
    else if (strcmp(argv[i], "--linger") == 0)
      linger = atof(argv[++i]);
  }
  dc_group *g = mp_init_or_die("probe");
  int rank = dc_group_rank(g);
  float *buf = mp_alloc(count * sizeof *buf);
  for (size_t i = 0; i < count; i++)
    buf[i] = 0.0f; /* stays 0: sums of zeros, no overflow however long */
  for (size_t it = 0; it < iters; it++) {
    dc_status st = dc_all_sum(g, buf, buf, count, DC_FLOAT32);
    if (st != DC_OK) {
      printf("rank %d: ERR %s at %.6f: %s\n", rank, dc_status_name(st),
             mp_wall(), dc_group_last_error(g));
      fflush(stdout);
      int bad = check_poisoned(g, st, buf, count);
      free(buf);
      sleep_s(linger);
      return bad ? 5 : 4;
    }
    if (it == 0) {
      printf("rank %d ready pid %ld\n", rank, (long)getpid());
      fflush(stdout);
      pthread_t th;
      if (rank == die_rank && pthread_create(&th, NULL, die_later, NULL) == 0)
        pthread_detach(th);
    }
  }
  printf("rank %d: %zu iterations done\n", rank, iters);
  dc_group_free(g);
  free(buf);
  return 0;
}

/* ---- mismatch ----------------------------------------------------------- */

/* Rank odd_rank calls something different from the others. */
static int odd_rank;

static dc_status disagree(dc_group *g, const char *kind, float *buf,
                          size_t count) {
  int odd = dc_group_rank(g) == odd_rank;
  if (strcmp(kind, "count") == 0)
    return dc_all_sum(g, buf, buf, count + (size_t)odd, DC_FLOAT32);
  if (strcmp(kind, "dtype") == 0) /* same element size: only the type differs */
    return dc_all_sum(g, buf, buf, count, odd ? DC_INT32 : DC_FLOAT32);
  if (strcmp(kind, "dtype8") == 0) /* a quarter of the bytes */
    return dc_all_sum(g, buf, buf, count, odd ? DC_INT8 : DC_FLOAT32);
  if (strcmp(kind, "op") == 0)
    return dc_all_reduce(g, buf, buf, count, DC_FLOAT32, odd ? DC_MAX : DC_SUM);
  if (strcmp(kind, "root") == 0)
    return dc_broadcast(g, buf, count, DC_FLOAT32, odd ? 1 : 0);
  if (strcmp(kind, "p2p") == 0) /* 2 ranks: 0 sends to 1 */
    return dc_group_rank(g) == 0
               ? dc_send(g, buf, count + (size_t)odd, DC_FLOAT32, 1)
               : dc_recv(g, buf, count + (size_t)odd, DC_FLOAT32, 0);
  if (strcmp(kind, "barrier") == 0) /* a barrier against an all_sum */
    return odd ? dc_barrier(g) : dc_all_sum(g, buf, buf, count, DC_FLOAT32);
  if (strcmp(kind, "algo") == 0) /* the odd rank set DISTCOMM_DIRECT_RANKS */
    return dc_all_sum(g, buf, buf, count, DC_FLOAT32);
  if (odd) /* coll: a gather against everybody else's all_sum */
    return dc_all_gather(g, buf, buf + count, count / 2, DC_FLOAT32);
  return dc_all_sum(g, buf, buf, count, DC_FLOAT32);
}

/* Elements this rank's own call may write; the rest must stay untouched. */
#define CANARY 12345.0f
static size_t own_reach(const char *kind, int odd, size_t count, int size) {
  if (odd && (strcmp(kind, "count") == 0 || strcmp(kind, "p2p") == 0))
    return count + 1;
  if (odd && strcmp(kind, "coll") == 0)
    return count + count / 2 * (size_t)size;
  return count;
}

static int canary_hit(const float *buf, size_t used, size_t room, int rank) {
  for (size_t i = used; i < room; i++)
    if (buf[i] != CANARY) {
      printf("rank %d: CANARY element %zu written (this rank's call may "
             "write %zu)\n",
             rank, i, used);
      return 1;
    }
  return 0;
}

static int cmd_mismatch(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t count = mp_parse_size("COUNT", argv[1]);
  /* algo: rank ODD (MLX_RANK, before init) takes recursive doubling for
   * small all_sums where the others exchange with every rank directly */
  const char *me = getenv("MLX_RANK");
  if (strcmp(argv[0], "algo") == 0 && argc > 2 && me &&
      strcmp(me, argv[2]) == 0)
    setenv("DISTCOMM_DIRECT_RANKS", "1", 1);
  dc_group *g = mp_init_or_die("probe");
  int rank = dc_group_rank(g), size = dc_group_size(g);
  odd_rank = argc > 2 ? (int)mp_parse_size("ODD", argv[2]) : size - 1;
  /* Room for count + 1 elements and for a gather of count / 2 per rank. */
  size_t room = count + 1 + (count / 2 + 1) * (size_t)size;
  float *buf = mp_alloc(room * sizeof *buf);
  memset(buf, 0, room * sizeof *buf);
  size_t used = own_reach(argv[0], rank == odd_rank, count, size);
  for (size_t i = used; i < room; i++)
    buf[i] = CANARY;
  double t0 = mp_mono();
  dc_status st = disagree(g, argv[0], buf, count);
  if (canary_hit(buf, used, room, rank))
    return 7;
  const char *where = ""; /* the broadcast itself must fail: receivers ack */
  double dt = mp_mono() - t0;
  if (st == DC_OK) {
    printf("rank %d: mismatch-%s: OK (no error after %.3f s)\n", rank, argv[0],
           dt);
    dc_group_free(g);
    free(buf);
    return 1;
  }
  printf("rank %d: mismatch-%s: %s after %.3f s%s: %s\n", rank, argv[0],
         dc_status_name(st), dt, where, dc_group_last_error(g));
  fflush(stdout);
  int bad = check_poisoned(g, st, buf, count);
  free(buf);
  return bad ? 5 : 0;
}

/* ---- lonely ------------------------------------------------------------ */

/* Rank 0 sends COUNT floats to rank 1, which sleeps SECONDS instead of
 * receiving: the send must fail with the group's timeout, not hang. */
static int cmd_lonely(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t count = mp_parse_size("COUNT", argv[0]);
  double secs = (double)mp_parse_size("SECONDS", argv[1]);
  dc_group *g = mp_init_or_die("probe");
  int rank = dc_group_rank(g);
  float *buf = mp_alloc(count * sizeof *buf);
  memset(buf, 0, count * sizeof *buf);
  if (rank == 0) {
    double t0 = mp_mono();
    dc_status st = dc_send(g, buf, count, DC_FLOAT32, 1);
    printf("rank 0: lonely: %s after %.3f s: %s\n", dc_status_name(st),
           mp_mono() - t0, dc_group_last_error(g));
  } else if (rank == 1) {
    sleep_s(secs);
  }
  fflush(stdout);
  dc_group_free(g);
  free(buf);
  return 0;
}

/* ---- invalid arguments -------------------------------------------------- */

typedef struct tally {
  int rank;
  long pass, fail;
} tally;

static void expect(tally *t, dc_group *g, const char *what, dc_status st,
                   dc_status want) {
  if (st == want && (want == DC_OK || dc_group_last_error(g)[0])) {
    t->pass++;
    return;
  }
  t->fail++;
  printf("rank %d: FAIL %s: returned %s, expected %s (detail: \"%s\")\n",
         t->rank, what, dc_status_name(st), dc_status_name(want),
         dc_group_last_error(g));
}

/* expect, and the group's detail names the bad argument (needle). */
static void expect_named(tally *t, dc_group *g, const char *what, dc_status st,
                         dc_status want, const char *needle) {
  expect(t, g, what, st, want);
  if (st == want && !strstr(dc_group_last_error(g), needle)) {
    t->fail++;
    printf("rank %d: FAIL %s: detail \"%s\" does not say \"%s\"\n", t->rank,
           what, dc_group_last_error(g), needle);
  }
}

static void expect_status(tally *t, const char *what, dc_status st,
                          dc_status want) {
  if (st == want) {
    t->pass++;
    return;
  }
  t->fail++;
  printf("rank %d: FAIL %s: returned %s, expected %s\n", t->rank, what,
         dc_status_name(st), dc_status_name(want));
}

static void null_buffers(tally *t, dc_group *g, float *b) {
  int n = dc_group_size(g), peer = (t->rank + 1) % n;
  expect(t, g, "all_sum NULL send", dc_all_sum(g, NULL, b, 4, DC_FLOAT32),
         DC_ERR_INVALID);
  expect(t, g, "all_sum NULL recv", dc_all_sum(g, b, NULL, 4, DC_FLOAT32),
         DC_ERR_INVALID);
  expect(t, g, "all_gather NULL recv", dc_all_gather(g, b, NULL, 4, DC_INT8),
         DC_ERR_INVALID);
  expect(t, g, "sum_scatter NULL send",
         dc_sum_scatter(g, NULL, b, 1, DC_FLOAT32), DC_ERR_INVALID);
  expect(t, g, "broadcast NULL", dc_broadcast(g, NULL, 4, DC_FLOAT32, 0),
         DC_ERR_INVALID);
  if (n > 1)
    expect(t, g, "send NULL", dc_send(g, NULL, 4, DC_FLOAT32, peer),
           DC_ERR_INVALID);
  if (n > 1)
    expect(t, g, "recv NULL", dc_recv(g, NULL, 4, DC_FLOAT32, peer),
           DC_ERR_INVALID);
}

/* Count 0 with NULL buffers is a valid no-op on every rank. */
static void zero_counts(tally *t, dc_group *g) {
  expect(t, g, "all_sum count 0 NULL", dc_all_sum(g, NULL, NULL, 0, DC_INT32),
         DC_OK);
  expect(t, g, "all_gather count 0 NULL",
         dc_all_gather(g, NULL, NULL, 0, DC_INT32), DC_OK);
  expect(t, g, "sum_scatter count 0 NULL",
         dc_sum_scatter(g, NULL, NULL, 0, DC_INT32), DC_OK);
  expect(t, g, "broadcast count 0 NULL", dc_broadcast(g, NULL, 0, DC_INT32, 0),
         DC_OK);
  if (dc_group_size(g) < 2)
    return;
  if (t->rank == 0)
    expect(t, g, "send count 0 NULL", dc_send(g, NULL, 0, DC_INT32, 1), DC_OK);
  if (t->rank == 1)
    expect(t, g, "recv count 0 NULL", dc_recv(g, NULL, 0, DC_INT32, 0), DC_OK);
}

static void bad_peers(tally *t, dc_group *g, float *b) {
  int n = dc_group_size(g);
  expect(t, g, "send to self", dc_send(g, b, 1, DC_FLOAT32, t->rank),
         DC_ERR_INVALID);
  expect(t, g, "recv from self", dc_recv(g, b, 1, DC_FLOAT32, t->rank),
         DC_ERR_INVALID);
  expect(t, g, "send to size", dc_send(g, b, 1, DC_FLOAT32, n), DC_ERR_INVALID);
  expect(t, g, "recv from -1", dc_recv(g, b, 1, DC_FLOAT32, -1),
         DC_ERR_INVALID);
  expect(t, g, "broadcast root size", dc_broadcast(g, b, 1, DC_FLOAT32, n),
         DC_ERR_INVALID);
  expect(t, g, "broadcast root -1", dc_broadcast(g, b, 1, DC_FLOAT32, -1),
         DC_ERR_INVALID);
}

/* Every enum and rank argument out of range, blocking (issue 33, M4): op -1
 * was the library's internal "no reduction" and returned DC_OK unreduced. */
static void bad_enums(tally *t, dc_group *g, float *b) {
  int n = dc_group_size(g);
  size_t z[8] = {0};
  expect_named(t, g, "all_reduce op -1",
               dc_all_reduce(g, b, b + 4, 1, DC_FLOAT32, (dc_op)-1),
               DC_ERR_INVALID, "op -1");
  expect_named(t, g, "reduce_scatter op -1",
               dc_reduce_scatter(g, b, b + 32, 1, DC_FLOAT32, (dc_op)-1),
               DC_ERR_INVALID, "op -1");
  expect_named(t, g, "reduce_to op -1",
               dc_reduce_to(g, b, b + 32, 1, DC_FLOAT32, (dc_op)-1, 0),
               DC_ERR_INVALID, "op -1");
  expect_named(t, g, "all_reduce op count",
               dc_all_reduce(g, b, b, 1, DC_FLOAT32, DC_OP_COUNT),
               DC_ERR_INVALID, "op 4");
  expect_named(t, g, "all_gather dtype -1",
               dc_all_gather(g, b, b + 32, 1, (dc_dtype)-1), DC_ERR_INVALID,
               "dtype -1");
  expect_named(t, g, "reduce_scatter dtype count",
               dc_reduce_scatter(g, b, b + 32, 1, DC_DTYPE_COUNT, DC_SUM),
               DC_ERR_INVALID, "dtype");
  expect_named(t, g, "broadcast dtype -1",
               dc_broadcast(g, b, 1, (dc_dtype)-1, 0), DC_ERR_INVALID,
               "dtype -1");
  expect_named(t, g, "all_to_all dtype -1",
               dc_all_to_all(g, b, b + 32, 1, (dc_dtype)-1), DC_ERR_INVALID,
               "dtype -1");
  expect_named(t, g, "all_to_allv dtype -1",
               dc_all_to_allv(g, b, z, z, b + 32, z, z, (dc_dtype)-1),
               DC_ERR_INVALID, "dtype -1");
  if (n > 1)
    expect_named(t, g, "send dtype 99",
                 dc_send(g, b, 1, (dc_dtype)99, (t->rank + 1) % n),
                 DC_ERR_INVALID, "dtype 99");
  expect_named(t, g, "gather root -1", dc_gather(g, b, b + 32, 1, DC_INT8, -1),
               DC_ERR_INVALID, "root -1");
  expect_named(t, g, "scatter root size",
               dc_scatter(g, b + 32, b, 1, DC_INT8, n), DC_ERR_INVALID, "root");
  expect_named(t, g, "reduce_to root size",
               dc_reduce_to(g, b, b + 32, 1, DC_FLOAT32, DC_SUM, n),
               DC_ERR_INVALID, "root");
}

/* A refused dc_i* call: the status at the call, *req NULL, the detail in
 * dc_last_error() naming the argument (the header's rule 1). */
static void expect_refused(tally *t, const char *what, dc_status st,
                           dc_request *req, dc_status want,
                           const char *needle) {
  if (st == want && !req && strstr(dc_last_error(), needle)) {
    t->pass++;
    return;
  }
  t->fail++;
  printf("rank %d: FAIL %s: returned %s (req %p), expected %s at the call "
         "(detail: \"%s\", wanted \"%s\")\n",
         t->rank, what, dc_status_name(st), (void *)req, dc_status_name(want),
         dc_last_error(), needle);
  if (req)
    dc_request_free(req); /* ran or will run: a hang shows as a timeout */
}

/* The same arguments, non-blocking: refused when the call is made. */
static void bad_requests(tally *t, dc_group *g, float *b) {
  int n = dc_group_size(g), me = t->rank;
  dc_request *r = (dc_request *)b; /* must come back NULL */
  dc_status st = dc_iall_reduce(g, b, b + 4, 1, DC_FLOAT32, (dc_op)-1, &r);
  expect_refused(t, "iall_reduce op -1", st, r, DC_ERR_INVALID, "op -1");
  st = dc_ireduce_scatter(g, b, b + 32, 1, DC_FLOAT32, (dc_op)-1, &r);
  expect_refused(t, "ireduce_scatter op -1", st, r, DC_ERR_INVALID, "op -1");
  st = dc_ireduce_to(g, b, b + 32, 1, DC_FLOAT32, (dc_op)99, 0, &r);
  expect_refused(t, "ireduce_to op 99", st, r, DC_ERR_INVALID, "op 99");
  st = dc_iall_sum(g, b, b, 1, (dc_dtype)-1, &r);
  expect_refused(t, "iall_sum dtype -1", st, r, DC_ERR_INVALID, "dtype -1");
  st = dc_iall_max(g, b, b, 1, DC_COMPLEX64, &r);
  expect_refused(t, "iall_max complex64", st, r, DC_ERR_NOT_SUPPORTED,
                 "max of complex64");
  st = dc_iall_sum(g, NULL, b, 4, DC_FLOAT32, &r);
  expect_refused(t, "iall_sum NULL send", st, r, DC_ERR_INVALID, "send");
  st = dc_isend(g, b, 1, DC_FLOAT32, me, &r);
  expect_refused(t, "isend to self", st, r, DC_ERR_INVALID, "dst");
  st = dc_irecv(g, b, 1, DC_FLOAT32, -1, &r);
  expect_refused(t, "irecv from -1", st, r, DC_ERR_INVALID, "src -1");
  st = dc_ibroadcast(g, b, 1, DC_FLOAT32, n, &r);
  expect_refused(t, "ibroadcast root size", st, r, DC_ERR_INVALID, "root");
  st = dc_igather(g, b, b + 32, 1, DC_INT8, -1, &r);
  expect_refused(t, "igather root -1", st, r, DC_ERR_INVALID, "root -1");
  st = dc_iscatter(g, b + 32, b, 1, DC_INT8, n, &r);
  expect_refused(t, "iscatter root size", st, r, DC_ERR_INVALID, "root");
  st = dc_iall_to_all(g, b, b, 1, DC_INT8, &r);
  expect_refused(t, "iall_to_all same buffer", st, r, DC_ERR_INVALID, "same");
}

static void bad_kinds(tally *t, dc_group *g, float *b) {
  expect(t, g, "dtype 99", dc_all_sum(g, b, b, 1, (dc_dtype)99),
         DC_ERR_INVALID);
  expect(t, g, "op 99", dc_all_reduce(g, b, b, 1, DC_FLOAT32, (dc_op)99),
         DC_ERR_INVALID);
  expect(t, g, "max of complex64", dc_all_max(g, b, b, 1, DC_COMPLEX64),
         DC_ERR_NOT_SUPPORTED);
  expect(t, g, "min of complex64 scatter",
         dc_reduce_scatter(g, b, b, 1, DC_COMPLEX64, DC_MIN),
         DC_ERR_NOT_SUPPORTED);
  /* These report through their status only (no group detail to check). */
  expect_status(t, "timeout 0", dc_group_set_timeout(g, 0), DC_ERR_INVALID);
  expect_status(t, "timeout -1", dc_group_set_timeout(g, -1), DC_ERR_INVALID);
  expect_status(t, "split NULL out", dc_group_split(g, 0, 0, NULL),
                DC_ERR_INVALID);
  expect_status(t, "init NULL group", dc_init("any", 0, NULL), DC_ERR_INVALID);
}

/* A NULL group: every call fails with DC_ERR_INVALID saying so (through
 * dc_last_error, as there is no group to hold the detail); no crash. */
static void null_group(tally *t, float *b) {
  dc_group *sub = NULL;
  dc_status st[] = {dc_all_sum(NULL, b, b, 1, DC_FLOAT32),
                    dc_all_gather(NULL, b, b, 1, DC_FLOAT32),
                    dc_send(NULL, b, 1, DC_FLOAT32, 0),
                    dc_recv(NULL, b, 1, DC_FLOAT32, 0),
                    dc_broadcast(NULL, b, 1, DC_FLOAT32, 0),
                    dc_barrier(NULL),
                    dc_group_split(NULL, 0, 0, &sub),
                    dc_group_set_timeout(NULL, 1.0)};
  for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
    expect_status(t, "call on a NULL group", st[i], DC_ERR_INVALID);
  if (!strstr(dc_last_error(), "group is NULL") || sub ||
      dc_group_rank(NULL) != -1 || dc_group_size(NULL) != 0) {
    t->fail++;
    printf("rank %d: FAIL NULL group: detail \"%s\"\n", t->rank,
           dc_last_error());
  }
  dc_group_free(NULL); /* a no-op */
}

/* Argument errors must not poison: a real all_sum still works. */
static void still_usable(tally *t, dc_group *g) {
  int n = dc_group_size(g);
  float v[3] = {(float)t->rank + 1, 1.0f, -(float)t->rank};
  float want[3] = {(float)n * (float)(n + 1) / 2, (float)n,
                   -(float)n * (float)(n - 1) / 2};
  expect(t, g, "all_sum after errors", dc_all_sum(g, v, v, 3, DC_FLOAT32),
         DC_OK);
  if (memcmp(v, want, sizeof v) != 0) {
    t->fail++;
    printf("rank %d: FAIL all_sum after errors gave %g %g %g\n", t->rank, v[0],
           v[1], v[2]);
  }
}

static int cmd_invalid(void) {
  dc_group *g = mp_init_or_die("probe");
  tally t = {dc_group_rank(g), 0, 0};
  float b[64] = {0};
  null_buffers(&t, g, b);
  zero_counts(&t, g);
  bad_peers(&t, g, b);
  bad_kinds(&t, g, b);
  bad_enums(&t, g, b);
  bad_requests(&t, g, b);
  null_group(&t, b);
  still_usable(&t, g);
  printf("rank %d/%d: invalid: %ld checks passed, %ld failed\n", t.rank,
         dc_group_size(g), t.pass, t.fail);
  dc_group_free(g);
  return t.fail || t.pass < 20 ? 1 : 0;
}

/* ---- occupy a port ------------------------------------------------------ */

static int cmd_occupy(int argc, char **argv) {
  if (argc < 2)
    return 2;
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_port = htons((unsigned short)mp_parse_size("PORT", argv[0]));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(fd, 4) != 0) {
    perror("occupy");
    return 3;
  }
  printf("listening %s\n", argv[0]);
  fflush(stdout);
  sleep_s((double)mp_parse_size("SECONDS", argv[1]));
  close(fd);
  return 0;
}

/* ---- token ------------------------------------------------------------- */

static int cmd_token(void) {
  dc_group *g = NULL, *sub = NULL;
  int had = getenv("DISTCOMM_JOB_TOKEN") != NULL;
  dc_status st = dc_init("any", 1, &g);
  if (st != DC_OK) {
    printf("ERR %s: %s\n", dc_status_name(st), dc_last_error());
    return 3;
  }
  int rank = dc_group_rank(g), bad = 0;
  if (!had)
    printf("BUG rank %d: no DISTCOMM_JOB_TOKEN to start with\n", rank), bad = 1;
  if (getenv("DISTCOMM_JOB_TOKEN"))
    printf("BUG rank %d: DISTCOMM_JOB_TOKEN still in the environment\n", rank),
        bad = 1;
  float x = 1.0f;
  st = dc_group_split(g, 0, -1, &sub);
  if (st == DC_OK)
    st = dc_all_sum(sub, &x, &x, 1, DC_FLOAT32);
  if (st != DC_OK || x != (float)dc_group_size(g))
    printf("BUG rank %d: split after init: %s (%s), sum %g\n", rank,
           dc_status_name(st), dc_last_error(), (double)x),
        bad = 1;
  dc_group_free(sub);
  dc_group_free(g);
  if (!bad)
    printf("token OK rank %d\n", rank);
  return bad;
}

int main(int argc, char **argv) {
  const char *cmd = argc > 1 ? argv[1] : "";
  if (strcmp(cmd, "init") == 0)
    return cmd_init(argc - 2, argv + 2);
  if (strcmp(cmd, "loop") == 0)
    return cmd_loop(argc - 2, argv + 2);
  if (strcmp(cmd, "mismatch") == 0)
    return cmd_mismatch(argc - 2, argv + 2);
  if (strcmp(cmd, "lonely") == 0)
    return cmd_lonely(argc - 2, argv + 2);
  if (strcmp(cmd, "invalid") == 0)
    return cmd_invalid();
  if (strcmp(cmd, "token") == 0)
    return cmd_token();
  if (strcmp(cmd, "occupy") == 0)
    return cmd_occupy(argc - 2, argv + 2);
  fprintf(stderr,
          "usage: probe init|loop|mismatch|lonely|invalid|token|occupy ...\n");
  return 2;
}
