/* Non-blocking requests (dc_i*) against the blocking calls.
 *
 * Usage: async_test mixed | mismatch | mismatch-blocking | lazy | kill MIB
 *   mixed     many requests in flight at once (all_sum/max/min of several
 *             dtypes, all_gather, sum_scatter, broadcast from every root,
 *             barrier, send/recv between pairs); results must equal the
 *             blocking calls' bit for bit; a blocking call issued with
 *             requests in flight queues behind them; odd ranks run the same
 *             sequence blocking while even ranks run it non-blocking (the
 *             ops match); dc_test reaches done; requests outlive the group.
 *             Prints "rank R/N: K checks passed, F failed".
 *   mismatch  rank 0 issues iall_sum of 10 floats, the others 11: every
 *             rank's request fails with ERR_MISMATCH, the requests behind it
 *             fail alike, and a new request fails at once.
 *   mismatch-blocking  the same, but rank 0 makes a blocking dc_all_sum of
 *             10 floats against the others' requests of 11: the blocking
 *             call fails with ERR_MISMATCH too, and so does rank 0's next
 *             request, at once.
 *   lazy      the doorbell's lazy mode (src/compose/request.c): after many
 *             requests waited for at once, rank 0 issues one and sleeps
 *             1 s before waiting: the others' blocking all_sum must end
 *             within 0.5 s (the thread starts a request nobody waits for);
 *             then requests ahead of the one waited for, and ahead of a
 *             blocking call, run in order with the right results, and
 *             wait-then-free / free-later mixes reuse requests correctly.
 *   kill MIB [SECONDS]  loops: 4 requests of MIB MiB in flight, then
 *             wait_all (the group's timeout becomes SECONDS after the first
 *             round, when given). Prints
 *             "rank R ready pid P" after the first round. When a peer dies:
 *             "rank R: ERR <STATUS> at <wall>: <detail>" for the first
 *             failed request, checks every request failed with that status
 *             and detail and a new one fails at once, frees; exit 4. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"

static long pass, fails;
static int rank, size;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      pass++;                                                                  \
    } else {                                                                   \
      fails++;                                                                 \
      printf("rank %d/%d: FAIL ", rank, size);                                 \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

#define NOPS 64

/* One op of the sequence: what and on which buffers. */
typedef struct step {
  int kind; /* 0 reduce, 1 gather, 2 sum_scatter, 3 bcast, 4 barrier, 5 p2p */
  dc_dtype dtype;
  dc_op op;
  size_t count;
  int root;
  void *send, *recv;
} step;

static const dc_dtype dtypes[] = {DC_FLOAT32, DC_INT64, DC_UINT8,
                                  DC_FLOAT64, DC_INT32, DC_BFLOAT16};

/* Small integers in every dtype: sums of a few ranks are exact, so every
 * algorithm (ring, direct, single copy) gives the same bits. */
static void fill(void *buf, size_t n, dc_dtype t, int tag) {
  for (size_t i = 0; i < n; i++) {
    int v = (int)(mp_mix(mp_key(rank, i, t, tag)) & 7);
    float f = (float)v;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    switch (t) {
    case DC_FLOAT32:
      ((float *)buf)[i] = f;
      break;
    case DC_FLOAT64:
      ((double *)buf)[i] = v;
      break;
    case DC_INT64:
      ((int64_t *)buf)[i] = v;
      break;
    case DC_INT32:
      ((int32_t *)buf)[i] = v;
      break;
    case DC_BFLOAT16:
      ((uint16_t *)buf)[i] = (uint16_t)(fb >> 16);
      break;
    default:
      ((uint8_t *)buf)[i] = (uint8_t)v;
      break;
    }
  }
}

static size_t out_bytes(const step *s) {
  size_t b = s->count * dc_dtype_size(s->dtype);
  return s->kind == 1 ? b * (size_t)size : b;
}

static void make(step *s, int i) {
  static const size_t counts[] = {0, 1, 7, 1000, 65537, 300000};
  s->kind = i % 6;
  s->dtype = dtypes[(size_t)i % (sizeof dtypes / sizeof dtypes[0])];
  s->op = (dc_op)(i % 3); /* sum, max, min */
  s->count = counts[(size_t)(i / 6) % (sizeof counts / sizeof counts[0])];
  s->root = i % size;
  size_t es = dc_dtype_size(s->dtype);
  size_t in = s->count * es * (s->kind == 2 ? (size_t)size : 1);
  s->send = mp_alloc(in);
  fill(s->send, in / es, s->dtype, i);
  s->recv = mp_alloc(out_bytes(s));
  memset(s->recv, 0, out_bytes(s));
  if (s->kind == 3) /* broadcast is in place: the root's data */
    memcpy(s->recv, s->send, out_bytes(s));
}

static int partner(void) {
  int p = rank ^ 1;
  return p < size ? p : -1;
}

static dc_status blocking(dc_group *g, step *s) {
  int p = partner();
  switch (s->kind) {
  case 0:
    return dc_all_reduce(g, s->send, s->recv, s->count, s->dtype, s->op);
  case 1:
    return dc_all_gather(g, s->send, s->recv, s->count, s->dtype);
  case 2:
    return dc_sum_scatter(g, s->send, s->recv, s->count, s->dtype);
  case 3:
    return dc_broadcast(g, s->recv, s->count, s->dtype, s->root);
  case 4:
    return dc_barrier(g);
  }
  if (p < 0)
    return DC_OK;
  /* the lower rank sends first, so the pair never both wait to send */
  dc_status st = rank < p ? dc_send(g, s->send, s->count, s->dtype, p)
                          : dc_recv(g, s->recv, s->count, s->dtype, p);
  if (st != DC_OK)
    return st;
  return rank < p ? dc_recv(g, s->recv, s->count, s->dtype, p)
                  : dc_send(g, s->send, s->count, s->dtype, p);
}

/* The same op as blocking(), as requests (p2p: two). */
static dc_status issue(dc_group *g, step *s, dc_request **r) {
  int p = partner();
  r[0] = r[1] = NULL;
  switch (s->kind) {
  case 0:
    return dc_iall_reduce(g, s->send, s->recv, s->count, s->dtype, s->op, r);
  case 1:
    return dc_iall_gather(g, s->send, s->recv, s->count, s->dtype, r);
  case 2:
    return dc_isum_scatter(g, s->send, s->recv, s->count, s->dtype, r);
  case 3:
    return dc_ibroadcast(g, s->recv, s->count, s->dtype, s->root, r);
  case 4:
    return dc_ibarrier(g, r);
  }
  if (p < 0)
    return DC_OK;
  dc_status st = rank < p ? dc_isend(g, s->send, s->count, s->dtype, p, r)
                          : dc_irecv(g, s->recv, s->count, s->dtype, p, r);
  if (st != DC_OK)
    return st;
  return rank < p ? dc_irecv(g, s->recv, s->count, s->dtype, p, r + 1)
                  : dc_isend(g, s->send, s->count, s->dtype, p, r + 1);
}

static int mixed(dc_group *g) {
  step a[NOPS], b[NOPS];
  dc_request *req[2 * NOPS];
  for (int i = 0; i < NOPS; i++) {
    make(&a[i], i);
    make(&b[i], i);
  }
  /* Round 1: everything in flight at once, then one blocking all_sum that
   * must queue behind it; then wait_all. */
  for (int i = 0; i < NOPS; i++) {
    dc_status st = issue(g, &a[i], req + 2 * i);
    CHECK(st == DC_OK, "issue %d: %s", i, dc_status_name(st));
  }
  int64_t one = 1, sum = 0;
  dc_status st = dc_all_sum(g, &one, &sum, 1, DC_INT64);
  CHECK(st == DC_OK && sum == size,
        "blocking all_sum behind requests: %s, %lld", dc_status_name(st),
        (long long)sum);
  int done = 0;
  st = dc_test(req[0], &done); /* the blocking call drained the queue */
  CHECK(st == DC_OK && done, "dc_test after a blocking call: %s done %d",
        dc_status_name(st), done);
  st = dc_wait_all(req, 2 * NOPS);
  CHECK(st == DC_OK, "wait_all: %s (%s)", dc_status_name(st),
        req[0] ? dc_request_error(req[0]) : "");
  for (int i = 0; i < 2 * NOPS; i++)
    dc_request_free(req[i]);
  /* Round 2: the same ops, blocking. */
  for (int i = 0; i < NOPS; i++) {
    st = blocking(g, &b[i]);
    CHECK(st == DC_OK, "blocking %d: %s (%s)", i, dc_status_name(st),
          dc_group_last_error(g));
    CHECK(memcmp(a[i].recv, b[i].recv, out_bytes(&a[i])) == 0,
          "op %d (kind %d, %s, count %zu): request result differs from "
          "the blocking one",
          i, a[i].kind, dc_dtype_name(a[i].dtype), a[i].count);
  }
  /* Round 3: odd ranks blocking, even ranks requests, same ops: they match.
   * Each request is polled with dc_test until done. */
  for (int i = 0; i < NOPS; i++) {
    memset(a[i].recv, 0, out_bytes(&a[i]));
    if (a[i].kind == 3)
      memcpy(a[i].recv, a[i].send, out_bytes(&a[i]));
    if (rank % 2) {
      st = blocking(g, &a[i]);
      CHECK(st == DC_OK, "mixed blocking %d: %s", i, dc_status_name(st));
      continue;
    }
    st = issue(g, &a[i], req);
    for (int k = 0; k < 2 && st == DC_OK; k++) {
      for (done = !req[k]; !done && st == DC_OK;)
        st = dc_test(req[k], &done);
      dc_request_free(req[k]);
    }
    CHECK(st == DC_OK, "mixed request %d: %s", i, dc_status_name(st));
  }
  for (int i = 0; i < NOPS; i++)
    CHECK(memcmp(a[i].recv, b[i].recv, out_bytes(&a[i])) == 0,
          "op %d: result differs when ranks mix blocking and requests", i);
  /* Requests outlive the group: free it with requests in flight (it waits
   * for them), then wait and free the requests. */
  for (int i = 0; i < 4; i++)
    CHECK(issue(g, &a[i], req + 2 * i) == DC_OK, "issue before free %d", i);
  dc_group_free(g);
  st = dc_wait_all(req, 8);
  CHECK(st == DC_OK, "wait after the group was freed: %s", dc_status_name(st));
  for (int i = 0; i < 8; i++)
    dc_request_free(req[i]);
  for (int i = 0; i < NOPS; i++) {
    free(a[i].send), free(a[i].recv), free(b[i].send), free(b[i].recv);
  }
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

/* After a failure st, a new request fails at once with st, and gives none. */
static void new_request_fails(dc_group *g, dc_status st, const char *after) {
  float x[11] = {0}, y[11];
  dc_request *late = (dc_request *)1;
  double t0 = mp_mono();
  dc_status s3 = dc_iall_sum(g, x, y, 11, DC_FLOAT32, &late);
  CHECK(s3 == st && late == NULL && mp_mono() - t0 < 1.0, "new request %s: %s",
        after, dc_status_name(s3));
  /* the header's rule 1: a refused dc_i* call's detail is dc_last_error() */
  CHECK(strcmp(dc_last_error(), dc_group_last_error(g)) == 0 &&
            dc_last_error()[0],
        "refused request %s: detail \"%s\", the group's \"%s\"", after,
        dc_last_error(), dc_group_last_error(g));
}

static int mismatch(dc_group *g) {
  float x[11] = {0}, y[11];
  dc_request *r[3];
  dc_status st = dc_iall_sum(g, x, y, rank == 0 ? 10 : 11, DC_FLOAT32, r);
  CHECK(st == DC_OK, "issue: %s", dc_status_name(st));
  st = dc_iall_sum(g, x, y, 11, DC_FLOAT32, r + 1);
  CHECK(st == DC_OK, "issue behind: %s", dc_status_name(st));
  st = dc_ibarrier(g, r + 2);
  CHECK(st == DC_OK, "issue barrier behind: %s", dc_status_name(st));
  st = dc_wait(r[0]);
  CHECK(st == DC_ERR_MISMATCH, "want ERR_MISMATCH, got %s: %s",
        dc_status_name(st), dc_request_error(r[0]));
  printf("rank %d: %s: %s\n", rank, dc_status_name(st), dc_request_error(r[0]));
  for (int i = 1; i < 3; i++) {
    dc_status s2 = dc_wait(r[i]);
    CHECK(s2 == st &&
              strcmp(dc_request_error(r[i]), dc_request_error(r[0])) == 0,
          "request %d behind: %s (%s)", i, dc_status_name(s2),
          dc_request_error(r[i]));
  }
  new_request_fails(g, st, "on a poisoned group");
  for (int i = 0; i < 3; i++)
    dc_request_free(r[i]);
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

/* Rank 0's blocking call meets the others' requests: each side must see
 * the mismatch, not wait for the other kind of call until the timeout. */
static int mismatch_blocking(dc_group *g) {
  if (rank != 0)
    return mismatch(g);
  float x[11] = {0}, y[11];
  double t0 = mp_mono();
  dc_status st = dc_all_sum(g, x, y, 10, DC_FLOAT32);
  CHECK(st == DC_ERR_MISMATCH,
        "blocking all_sum: want ERR_MISMATCH, got %s: %s", dc_status_name(st),
        dc_group_last_error(g));
  printf("rank %d: %s: %s (%.1f s)\n", rank, dc_status_name(st),
         dc_group_last_error(g), mp_mono() - t0);
  new_request_fails(g, st, "after the failed blocking call");
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

/* x[i] = rank + i + k: the all_sum is size * (i + k) + size (size - 1) / 2. */
static int sums_ok(const double *y, size_t n, int k) {
  for (size_t i = 0; i < n; i++)
    if (y[i] != size * (double)(i + (size_t)k) + size * (size - 1) / 2.0)
      return 0;
  return 1;
}

static void fill_k(double *x, size_t n, int k) {
  for (size_t i = 0; i < n; i++)
    x[i] = rank + (double)i + k;
}

static int lazy(dc_group *g) {
  enum { N = 5 };
  double x[4][N], y[4][N];
  dc_request *r[4];
  for (int k = 0; k < 32; k++) { /* waited for at once: the group goes lazy */
    fill_k(x[0], N, k);
    dc_status st = dc_iall_sum(g, x[0], y[0], N, DC_FLOAT64, r);
    if (st == DC_OK)
      st = dc_wait(r[0]);
    CHECK(st == DC_OK && sums_ok(y[0], N, k), "quick request %d: %s", k,
          dc_status_name(st));
    dc_request_free(r[0]);
  }
  fill_k(x[0], N, 7);
  if (rank == 0) {
    dc_status st = dc_iall_sum(g, x[0], y[0], N, DC_FLOAT64, r);
    usleep(1000 * 1000); /* nobody waits: the thread must start it */
    if (st == DC_OK)
      st = dc_wait(r[0]);
    CHECK(st == DC_OK && sums_ok(y[0], N, 7), "request not waited for: %s",
          dc_status_name(st));
    dc_request_free(r[0]);
  } else {
    double t0 = mp_mono();
    dc_status st = dc_all_sum(g, x[0], y[0], N, DC_FLOAT64);
    double dt = mp_mono() - t0;
    CHECK(st == DC_OK && sums_ok(y[0], N, 7) && dt < 0.5,
          "blocking all_sum against rank 0's request nobody waited for: "
          "%s after %.3f s (want < 0.5 s)",
          dc_status_name(st), dt);
  }
  for (int round = 0; round < 3; round++) {
    /* go lazy again, then three queued: waiting for the last runs all */
    for (int k = 0; k < 8; k++) {
      fill_k(x[0], N, k);
      dc_status st = dc_iall_sum(g, x[0], y[0], N, DC_FLOAT64, r);
      if (st == DC_OK)
        st = dc_wait(r[0]);
      CHECK(st == DC_OK && sums_ok(y[0], N, k), "quick %d: %s", k,
            dc_status_name(st));
      dc_request_free(r[0]);
    }
    for (int i = 0; i < 3; i++) {
      fill_k(x[i], N, 10 * round + i);
      CHECK(dc_iall_sum(g, x[i], y[i], N, DC_FLOAT64, r + i) == DC_OK,
            "issue %d", i);
    }
    dc_status st = dc_wait(r[2]);
    CHECK(st == DC_OK && sums_ok(y[2], N, 10 * round + 2), "last of 3: %s",
          dc_status_name(st));
    for (int i = 0; i < 2; i++) {
      int done = 0;
      dc_status s2 = dc_test(r[i], &done);
      CHECK(done && s2 == DC_OK && sums_ok(y[i], N, 10 * round + i),
            "request %d ahead of the one waited for: done %d, %s", i, done,
            dc_status_name(s2));
    }
    for (int i = 0; i < 3; i++)
      dc_request_free(r[i]);
    /* two queued, then a blocking call: it queues behind them */
    for (int i = 0; i < 3; i++)
      fill_k(x[i], N, 20 + i);
    CHECK(dc_iall_sum(g, x[0], y[0], N, DC_FLOAT64, r) == DC_OK, "issue a");
    CHECK(dc_iall_sum(g, x[1], y[1], N, DC_FLOAT64, r + 1) == DC_OK, "issue b");
    st = dc_all_sum(g, x[2], y[2], N, DC_FLOAT64);
    int d0 = 0, d1 = 0;
    dc_test(r[0], &d0);
    dc_test(r[1], &d1);
    CHECK(st == DC_OK && d0 && d1 && sums_ok(y[0], N, 20) &&
              sums_ok(y[1], N, 21) && sums_ok(y[2], N, 22),
          "blocking call behind two requests: %s, done %d %d",
          dc_status_name(st), d0, d1);
    dc_request_free(r[0]);
    dc_request_free(r[1]);
    /* wait, free later: requests reused while others are still held */
    for (int k = 0; k < 40; k++) {
      int i = k % 4;
      fill_k(x[i], N, k);
      st = dc_iall_sum(g, x[i], y[i], N, DC_FLOAT64, r + i);
      if (st == DC_OK)
        st = dc_wait(r[i]);
      CHECK(st == DC_OK && sums_ok(y[i], N, k), "held %d: %s", k,
            dc_status_name(st));
      if (i == 3)
        for (int j = 0; j < 4; j++)
          dc_request_free(r[j]);
    }
  }
  dc_group_free(g);
  printf("rank %d/%d: %ld checks passed, %ld failed\n", rank, size, pass,
         fails);
  return fails ? 1 : 0;
}

static int kill_loop(dc_group *g, size_t mib, double after) {
  size_t n = mib * 1024 * 1024 / 4;
  float *buf[4];
  for (int i = 0; i < 4; i++) {
    buf[i] = mp_alloc(n * 4);
    memset(buf[i], 0, n * 4);
  }
  for (long iter = 0;; iter++) {
    dc_request *r[4] = {0};
    for (int i = 0; i < 4; i++) {
      dc_status st = dc_iall_sum(g, buf[i], buf[i], n, DC_FLOAT32, r + i);
      if (st != DC_OK) {
        printf("rank %d: issue failed: %s\n", rank, dc_status_name(st));
        return 5;
      }
    }
    dc_status st = dc_wait_all(r, 4);
    if (st == DC_OK) {
      if (iter == 0) {
        /* the first round may be slow (TSan, a loaded host): the short
         * timeout a test asks for starts after it */
        if (after > 0 && dc_group_set_timeout(g, after) != DC_OK)
          return 5;
        printf("rank %d ready pid %d\n", rank, (int)getpid());
        fflush(stdout);
      }
      for (int i = 0; i < 4; i++)
        dc_request_free(r[i]);
      continue;
    }
    int first = 0;
    while (dc_wait(r[first]) == DC_OK)
      first++;
    printf("rank %d: ERR %s at %.6f: %s\n", rank, dc_status_name(st), mp_wall(),
           dc_request_error(r[first]));
    int same = 1;
    for (int i = first; i < 4; i++)
      same &= dc_wait(r[i]) == st &&
              strcmp(dc_request_error(r[i]), dc_request_error(r[first])) == 0;
    printf("rank %d: %s\n", rank,
           same ? "every outstanding request failed alike"
                : "requests failed differently");
    dc_request *late = NULL;
    dc_status s2 = dc_iall_sum(g, buf[0], buf[0], n, DC_FLOAT32, &late);
    printf("rank %d: poisoned: new request gave %s\n", rank,
           dc_status_name(s2));
    for (int i = 0; i < 4; i++)
      dc_request_free(r[i]);
    fflush(stdout);
    dc_group_free(g);
    for (int i = 0; i < 4; i++)
      free(buf[i]);
    return same && s2 == st && !late ? 4 : 6;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: async_test mixed | mismatch | mismatch-blocking | "
                    "lazy | kill MIB\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  dc_group *g = mp_init_or_die("async_test");
  rank = dc_group_rank(g);
  size = dc_group_size(g);
  if (!strcmp(argv[1], "mixed"))
    return mixed(g);
  if (!strcmp(argv[1], "mismatch"))
    return mismatch(g);
  if (!strcmp(argv[1], "mismatch-blocking"))
    return mismatch_blocking(g);
  if (!strcmp(argv[1], "lazy"))
    return lazy(g);
  if (!strcmp(argv[1], "kill") && argc > 2)
    return kill_loop(g, mp_parse_size("MIB", argv[2]),
                     argc > 3 ? atof(argv[3]) : 0);
  fprintf(stderr, "async_test: unknown mode %s\n", argv[1]);
  return 2;
}
