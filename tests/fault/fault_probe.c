/* fault_probe: one rank's side of the fault tests; the scripts read its lines.
 *
 *   fault_probe OP [--mib M | --floats N] [--iters N] [--check] [--linger S]
 *               [--timeout S] [--tag T]
 *     OP is all_sum (M MiB of float32, default 64, or N floats), sendrecv (M
 * MiB passed round the ring: rank 0 sends then receives, the others receive
 * then send) or barrier. Runs OP N times (default: until something fails).
 *     After the first: "rank R ready pid P job J" (a killer's cue: from then
 *     on the rank is inside OP nearly all the time). At the end:
 *     "rank R: N OP done[, checked]".
 *     --check fills rank- and iteration-dependent data and verifies every
 *     result ("rank R: WRONG ..." and exit 6 otherwise).
 *     On a failure: "rank R: ERR <STATUS> in OP #i at <wall> after <ms> ms:
 *     <detail>", then the sticky checks (every later call returns the same
 *     status at once, < 100 ms, and the detail is kept) and the time
 *     dc_group_free took; exit 4, or 5 when a sticky check failed. Sleeps S
 *     seconds before exiting, so that a launcher names the first failure.
 *     --timeout sets the group's timeout after the first OP and a barrier
 *     (DISTCOMM_TIMEOUT bounds set-up and that first OP too, which under
 *     valgrind or TSan on a busy host took longer than 3 s).
 *     --sentinel (sendrecv): fills the receive buffer with 0xee before
 *     each receive; on a failure says "rank R: receive buffer: N bytes
 *     changed".
 *     --tag is ignored: a unique word in argv lets a script find the job's
 *     processes. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"

typedef struct opts {
  const char *op;
  size_t count; /* float32 elements */
  size_t iters;
  int check;
  double linger;
  double timeout; /* > 0: the group's timeout after the first OP */
  int sentinel;   /* sendrecv: the receive buffer filled with SENTINEL */
} opts;

#define SENTINEL 0xee

typedef struct run {
  dc_group *g;
  int rank, size;
  float *buf, *tmp;
  const opts *o;
} run;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Small integers: sums over ranks stay exact in float32. */
static float value(int rank, size_t it, size_t i) {
  return (float)((i * 7 + (size_t)rank * 3 + it) % 64);
}

static void fill(const run *r, size_t it) {
  for (size_t i = 0; r->o->check && i < r->o->count; i++)
    r->buf[i] = value(r->rank, it, i);
}

static int verify_sum(const run *r, size_t it) {
  for (size_t i = 0; i < r->o->count; i++) {
    float want = 0;
    for (int q = 0; q < r->size; q++)
      want += value(q, it, i);
    if (r->buf[i] != want) {
      printf("rank %d: WRONG all_sum #%zu: element %zu is %g, want %g\n",
             r->rank, it, i, (double)r->buf[i], (double)want);
      return 6;
    }
  }
  return 0;
}

static int verify_recv(const run *r, size_t it, int src) {
  for (size_t i = 0; i < r->o->count; i++)
    if (r->tmp[i] != value(src, it, i)) {
      printf("rank %d: WRONG recv #%zu from rank %d: element %zu is %g\n",
             r->rank, it, src, i, (double)r->tmp[i]);
      return 6;
    }
  return 0;
}

/* One iteration of the op; *wrong set when --check finds a bad result. */
static dc_status step(const run *r, size_t it, int *wrong) {
  dc_status st;
  if (strcmp(r->o->op, "barrier") == 0)
    return dc_barrier(r->g);
  fill(r, it);
  if (strcmp(r->o->op, "all_sum") == 0) {
    st = dc_all_sum(r->g, r->buf, r->buf, r->o->count, DC_FLOAT32);
    if (st == DC_OK && r->o->check)
      *wrong = verify_sum(r, it);
    return st;
  }
  int next = (r->rank + 1) % r->size, prev = (r->rank + r->size - 1) % r->size;
  st = r->rank == 0 ? dc_send(r->g, r->buf, r->o->count, DC_FLOAT32, next)
                    : DC_OK;
  if (st == DC_OK && r->o->sentinel)
    memset(r->tmp, SENTINEL, r->o->count * sizeof(float));
  if (st == DC_OK)
    st = dc_recv(r->g, r->tmp, r->o->count, DC_FLOAT32, prev);
  if (st == DC_OK && r->rank != 0)
    st = dc_send(r->g, r->buf, r->o->count, DC_FLOAT32, next);
  if (st == DC_OK && r->o->check)
    *wrong = verify_recv(r, it, prev);
  return st;
}

/* ---- after a failure ----------------------------------------------------- */

/* Each later call must give the first status at once, keeping the detail. */
static int sticky(const run *r, dc_status first, const char *detail) {
  dc_group *g = r->g;
  int peer = (r->rank + 1) % r->size, bad = 0;
  float x[4] = {0};
  dc_group *sub = NULL;
  const char *names[] = {"all_sum", "barrier",   "all_gather", "send",
                         "recv",    "broadcast", "split"};
  for (int c = 0; c < 7; c++) {
    double t0 = mp_mono();
    dc_status st = c == 0   ? dc_all_sum(g, x, x, 4, DC_FLOAT32)
                   : c == 1 ? dc_barrier(g)
                   : c == 2 ? dc_all_gather(g, x, r->buf, 1, DC_FLOAT32)
                   : c == 3 ? dc_send(g, x, 4, DC_FLOAT32, peer)
                   : c == 4 ? dc_recv(g, x, 4, DC_FLOAT32, peer)
                   : c == 5 ? dc_broadcast(g, x, 4, DC_FLOAT32, 0)
                            : dc_group_split(g, 0, 0, &sub);
    double ms = (mp_mono() - t0) * 1e3;
    if (st != first || ms >= 100 || sub ||
        strcmp(dc_group_last_error(g), detail) != 0) {
      printf("rank %d: STICKY-FAIL %s gave %s after %.1f ms, detail \"%s\"\n",
             r->rank, names[c], dc_status_name(st), ms, dc_group_last_error(g));
      bad = 1;
    }
  }
  if (!bad)
    printf("rank %d: sticky: 7 later calls gave %s at once\n", r->rank,
           dc_status_name(first));
  return bad;
}

static int failed(run *r, dc_status st, size_t it, double t0) {
  double ms = (mp_mono() - t0) * 1e3;
  char detail[512];
  snprintf(detail, sizeof detail, "%s", dc_group_last_error(r->g));
  printf("rank %d: ERR %s in %s #%zu at %.6f after %.0f ms: %s\n", r->rank,
         dc_status_name(st), r->o->op, it, mp_wall(), ms, detail);
  if (r->o->sentinel) { /* what a failed receive wrote into the buffer */
    size_t changed = 0;
    for (size_t i = 0; i < r->o->count * sizeof(float); i++)
      changed += ((unsigned char *)r->tmp)[i] != SENTINEL;
    printf("rank %d: receive buffer: %zu bytes changed\n", r->rank, changed);
  }
  fflush(stdout);
  int bad = sticky(r, st, detail);
  t0 = mp_mono();
  dc_group_free(r->g);
  double s = mp_mono() - t0;
  printf("rank %d: freed in %.3f s\n", r->rank, s);
  fflush(stdout);
  return bad || s > 2.0 ? 5 : 4;
}

/* ---- main -----------------------------------------------------------------
 */

static int parse(int argc, char **argv, opts *o) {
  *o = (opts){.op = argc > 1 ? argv[1] : "", .iters = (size_t)-1};
  size_t mib = 64;
  if (strcmp(o->op, "all_sum") && strcmp(o->op, "sendrecv") &&
      strcmp(o->op, "barrier"))
    return 2;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0)
      o->check = 1;
    else if (strcmp(argv[i], "--sentinel") == 0)
      o->sentinel = 1;
    else if (i + 1 >= argc)
      return 2;
    else if (strcmp(argv[i], "--mib") == 0)
      mib = mp_parse_size("MIB", argv[++i]);
    else if (strcmp(argv[i], "--floats") == 0) /* instead of --mib */
      o->count = mp_parse_size("FLOATS", argv[++i]);
    else if (strcmp(argv[i], "--iters") == 0)
      o->iters = mp_parse_size("ITERS", argv[++i]);
    else if (strcmp(argv[i], "--linger") == 0)
      o->linger = atof(argv[++i]);
    else if (strcmp(argv[i], "--timeout") == 0)
      o->timeout = atof(argv[++i]);
    else if (strcmp(argv[i], "--tag") == 0)
      i++;
    else
      return 2;
  }
  if (strcmp(o->op, "barrier") == 0)
    o->count = 16;
  else if (o->count == 0)
    o->count = mib * ((size_t)1 << 20) / sizeof(float);
  return 0;
}

static int loop(run *r) {
  const char *job = getenv("DISTCOMM_JOB_ID");
  for (size_t it = 0; it < r->o->iters; it++) {
    int wrong = 0;
    double t0 = mp_mono();
    dc_status st = step(r, it, &wrong);
    if (st != DC_OK)
      return failed(r, st, it, t0);
    if (wrong)
      return wrong;
    /* every rank past the first op before the short timeout starts: in a
     * send/recv chain a rank's first op can wait on a slow start two ranks
     * away (TSan, 4 ranks on 2 cores), while its neighbour is already on
     * the next op with 3 s to live */
    if (it == 0 && r->o->timeout > 0 &&
        ((st = dc_barrier(r->g)) != DC_OK ||
         (st = dc_group_set_timeout(r->g, r->o->timeout)) != DC_OK)) {
      fprintf(stderr, "fault_probe: barrier or set_timeout(%g) failed: %s\n",
              r->o->timeout, dc_strerror(st));
      return 2;
    }
    if (it == 0) {
      printf("rank %d ready pid %ld job %s\n", r->rank, (long)getpid(),
             job && *job ? job : "-");
      fflush(stdout);
    }
  }
  printf("rank %d: %zu %s done%s\n", r->rank, r->o->iters, r->o->op,
         r->o->check ? ", checked" : "");
  dc_group_free(r->g);
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  if (parse(argc, argv, &o) != 0) {
    fprintf(stderr,
            "usage: fault_probe all_sum|sendrecv|barrier [--mib M | "
            "--floats N] [--iters N] [--check] [--sentinel] [--linger S] "
            "[--timeout S] [--tag T]\n");
    return 2;
  }
  run r = {.g = mp_init_or_die("fault_probe"), .o = &o};
  r.rank = dc_group_rank(r.g);
  r.size = dc_group_size(r.g);
  r.buf = mp_alloc(o.count * sizeof(float) + 64 * sizeof(float));
  r.tmp = mp_alloc(o.count * sizeof(float));
  memset(r.buf, 0, o.count * sizeof(float)); /* zeros: sums never overflow */
  int rc = loop(&r);
  fflush(stdout);
  free(r.buf);
  free(r.tmp);
  if (rc == 4 || rc == 5)
    sleep_s(o.linger);
  return rc;
}
