/* perf_bench.c - the timing loop and the rows it prints.
 *
 * Method (the same as ../shared/bench/peers/mpi_bench.c, so that figures line
 * up): per size, warm-up iterations, then `runs` timed runs each preceded by a
 * barrier; a run's time is its loop time / iterations, taken as the maximum
 * over ranks (the slowest rank's figure); the median run is reported. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perf.h"

/* ---- shapes, factors and iteration counts ---------------------------------
 */

/* Sizes follow nccl-tests: all_gather's is the gathered output,
 * reduce_scatter's the input, so per-rank counts are size / n. A size too small
 * for one element per rank is rounded up to one. */
perf_shape perf_shape_for(perf_op op, size_t bytes, int nranks, size_t esz) {
  perf_shape s;
  size_t n = (size_t)nranks;
  int split = op == PERF_ALL_GATHER || op == PERF_REDUCE_SCATTER ||
              op == PERF_ALL_TO_ALL || op == PERF_GATHER || op == PERF_SCATTER;
  size_t per = split ? bytes / (n * esz) : bytes / esz;
  s.count = per ? per : 1;
  size_t part = s.count * esz;
  s.bytes = split ? part * n : part;
  s.sbytes =
      op == PERF_REDUCE_SCATTER || op == PERF_ALL_TO_ALL || op == PERF_SCATTER
          ? s.bytes
          : part;
  s.rbytes = op == PERF_ALL_GATHER || op == PERF_ALL_TO_ALL || op == PERF_GATHER
                 ? s.bytes
                 : part;
  return s;
}

/* nccl-tests' bus bandwidth factors: what each rank's link carries. */
static double bus_factor(perf_op op, int n) {
  switch (op) {
  case PERF_ALL_REDUCE:
  case PERF_IALL_REDUCE:
    return 2.0 * (n - 1) / n;
  case PERF_ALL_GATHER:
  case PERF_REDUCE_SCATTER:
  case PERF_ALL_TO_ALL:
  case PERF_GATHER:
  case PERF_SCATTER:
    return (double)(n - 1) / n;
  default:
    return 1.0;
  }
}

/* The peers' schedule (mpi_bench.c iters_for): about 10-50 ms per run. */
static int auto_iters(size_t bytes) {
  if (bytes <= 1024)
    return 2000;
  if (bytes <= 65536)
    return 500;
  if (bytes <= (1u << 20))
    return 100;
  if (bytes <= (16u << 20))
    return 10;
  return 3;
}

/* The peers' names for the ops, for --peers-format rows. */
static const char *peers_name(perf_op op) {
  static const char *const names[PERF_OP_COUNT] = {
      "allreduce", "allgather", "reduce_scatter", "broadcast", "pingpong",
      "alltoall",  "gather",    "scatter",        "reduce",    "iallreduce"};
  return names[op];
}

static int is_reduction(perf_op op) {
  return op == PERF_ALL_REDUCE || op == PERF_REDUCE_SCATTER ||
         op == PERF_REDUCE || op == PERF_IALL_REDUCE;
}

/* One request, started and waited for. */
static dc_status iall_reduce(const perf_ctx *c, const perf_shape *sh) {
  dc_request *r = NULL;
  dc_status st = dc_iall_reduce(c->g, c->sb, c->rb, sh->count, c->o->dtype,
                                c->o->redop, &r);
  if (st == DC_OK)
    st = dc_wait(r);
  dc_request_free(r);
  return st;
}

/* ---- one call, a loop of calls, a timed size ----------------------------- */

/* Ranks 0 and 1 each send their own data, so both directions are checked. */
static dc_status sendrecv(const perf_ctx *c, const perf_shape *sh) {
  dc_dtype t = c->o->dtype;
  dc_status st = DC_OK;
  if (c->rank == 0) {
    st = dc_send(c->g, c->sb, sh->count, t, 1);
    if (st == DC_OK)
      st = dc_recv(c->g, c->rb, sh->count, t, 1);
  } else if (c->rank == 1) {
    st = dc_recv(c->g, c->rb, sh->count, t, 0);
    if (st == DC_OK)
      st = dc_send(c->g, c->sb, sh->count, t, 0);
  }
  return st;
}

static dc_status call_once(const perf_ctx *c, perf_op op,
                           const perf_shape *sh) {
  const perf_opts *o = c->o;
  switch (op) {
  case PERF_ALL_REDUCE:
    return dc_all_reduce(c->g, c->sb, c->rb, sh->count, o->dtype, o->redop);
  case PERF_ALL_GATHER:
    return dc_all_gather(c->g, c->sb, c->rb, sh->count, o->dtype);
  case PERF_REDUCE_SCATTER:
    return dc_reduce_scatter(c->g, c->sb, c->rb, sh->count, o->dtype, o->redop);
  case PERF_BROADCAST:
    return dc_broadcast(c->g, c->rb, sh->count, o->dtype, o->root);
  case PERF_SENDRECV:
    return sendrecv(c, sh);
  case PERF_ALL_TO_ALL:
    return dc_all_to_all(c->g, c->sb, c->rb, sh->count, o->dtype);
  case PERF_GATHER:
    return dc_gather(c->g, c->sb, c->rb, sh->count, o->dtype, o->root);
  case PERF_SCATTER:
    return dc_scatter(c->g, c->sb, c->rb, sh->count, o->dtype, o->root);
  case PERF_REDUCE:
    return dc_reduce_to(c->g, c->sb, c->rb, sh->count, o->dtype, o->redop,
                        o->root);
  case PERF_IALL_REDUCE:
    return iall_reduce(c, sh);
  default:
    return DC_ERR_INVALID;
  }
}

static void loop(const perf_ctx *c, perf_op op, const perf_shape *sh,
                 int iters) {
  for (int i = 0; i < iters; i++) {
    dc_status st = call_once(c, op, sh);
    if (st != DC_OK)
      perf_fail(c, st, perf_op_name(op));
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void barrier(const perf_ctx *c) {
  dc_status st = dc_barrier(c->g);
  if (st != DC_OK)
    perf_fail(c, st, "barrier");
}

static double max_over_ranks(const perf_ctx *c, double x) {
  double m;
  dc_status st = dc_all_max(c->g, &x, &m, 1, DC_FLOAT64);
  if (st != DC_OK)
    perf_fail(c, st, "all_max of the times");
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The upper median, as the peers take it (t[runs / 2] once sorted). */
static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

typedef struct perf_times {
  double slowest; /* median over runs of the max over ranks, seconds per call */
  double own;     /* this rank's own median */
} perf_times;

static perf_times time_size(const perf_ctx *c, perf_op op, const perf_shape *sh,
                            int iters) {
  int runs = c->o->runs;
  double *all = malloc(2 * (size_t)runs * sizeof *all), *mine = all + runs;
  if (!all)
    perf_fail(c, DC_ERR_NOMEM, "time buffer");
  barrier(c);
  loop(c, op, sh, c->o->warmup < 0 ? iters : c->o->warmup);
  for (int r = 0; r < runs; r++) {
    barrier(c);
    double t0 = now_s();
    loop(c, op, sh, iters);
    mine[r] = (now_s() - t0) / iters;
    all[r] = max_over_ranks(c, mine[r]);
  }
  perf_times t = {median(all, runs), median(mine, runs)};
  free(all);
  return t;
}

/* One verified call on fresh output: the wrong elements over all ranks. */
static long long check_size(perf_ctx *c, perf_op op, const perf_shape *sh) {
  perf_poison(c, op, sh);
  dc_status st = call_once(c, op, sh);
  if (st != DC_OK)
    perf_fail(c, st, perf_op_name(op));
  long long mine = (long long)perf_verify(c, op, sh), total;
  st = dc_all_sum(c->g, &mine, &total, 1, DC_INT64);
  if (st != DC_OK)
    perf_fail(c, st, "all_sum of the wrong counts");
  return total;
}

/* ---- printing (rank 0 only) -----------------------------------------------
 */

typedef struct perf_row {
  perf_op op;
  perf_shape sh;
  int iters;
  double time_s;   /* per call; one way for sendrecv */
  long long wrong; /* -1 when not checked */
} perf_row;

static void print_nccl_row(const perf_ctx *c, const perf_row *w, double alg,
                           double bus) {
  const perf_opts *o = c->o;
  char wrong[24] = "N/A";
  if (w->wrong >= 0)
    snprintf(wrong, sizeof wrong, "%lld", w->wrong);
  printf("%13zu %12zu %9s %7s %12.2f %10.3f %10.3f %8s\n", w->sh.bytes,
         w->sh.bytes / dc_dtype_size(o->dtype), dc_dtype_name(o->dtype),
         is_reduction(w->op) ? dc_op_name(o->redop) : "none", w->time_s * 1e6,
         alg, bus, wrong);
}

static void print_peers_row(const perf_row *w, double alg, double bus) {
  const char *chk = w->wrong < 0 ? "-" : w->wrong == 0 ? "ok" : "WRONG";
  printf("%-15s %12zu %6d %12.2f %10.3f %10.3f %s\n", peers_name(w->op),
         w->sh.bytes, w->iters, w->time_s * 1e6, alg, bus, chk);
}

static void print_row(perf_ctx *c, const perf_row *w) {
  double alg = (double)w->sh.bytes / w->time_s / 1e9;
  double bus = alg * bus_factor(w->op, c->size);
  c->busbw_sum += bus;
  c->rows++;
  if (c->rank != 0)
    return;
  if (c->o->peers_format)
    print_peers_row(w, alg, bus);
  else
    print_nccl_row(c, w, alg, bus);
  fflush(stdout);
}

/* Every rank's own median, so an imbalance between ranks shows. */
static void print_per_rank(const perf_ctx *c, double own) {
  double *t = malloc((size_t)c->size * sizeof *t);
  if (!t)
    perf_fail(c, DC_ERR_NOMEM, "per-rank times");
  dc_status st = dc_all_gather(c->g, &own, t, 1, DC_FLOAT64);
  if (st != DC_OK)
    perf_fail(c, st, "all_gather of the times");
  if (c->rank == 0) {
    printf("#   per-rank time (us):");
    for (int r = 0; r < c->size; r++)
      printf(" %d:%.2f", r, t[r] * 1e6);
    printf("\n");
  }
  free(t);
}

void perf_print_banner(const perf_ctx *c) {
  const perf_opts *o = c->o;
  if (c->rank != 0)
    return;
  printf(
      "# distcomm %s (distcomm-perf), backend %s, dtype %s, redop %s, root %d, "
      "check %s\n",
      dc_version(), dc_group_backend(c->g), dc_dtype_name(o->dtype),
      dc_op_name(o->redop), o->root, o->check ? "on" : "off");
  if (o->iters > 0)
    printf("# nranks=%d runs=%d (median reported) iters=%d", c->size, o->runs,
           o->iters);
  else
    printf("# nranks=%d runs=%d (median reported) iters=auto", c->size,
           o->runs);
  printf(o->warmup < 0 ? " warmup=iters\n" : " warmup=%d\n", o->warmup);
  if (o->peers_format)
    printf("%-15s %12s %6s %12s %10s %10s %s\n", "op", "bytes", "iters",
           "time_us", "algbw_GB/s", "busbw_GB/s", "check");
  fflush(stdout);
}

static void print_op_header(const perf_ctx *c, perf_op op) {
  if (c->rank != 0 || c->o->peers_format)
    return;
  printf("#\n# op %s\n", perf_op_name(op));
  printf("#%12s %12s %9s %7s %12s %10s %10s %8s\n", "size", "count", "type",
         "redop", "time", "algbw", "busbw", "#wrong");
  printf("#%12s %12s %9s %7s %12s %10s %10s\n", "(B)", "(elements)", "", "",
         "(us)", "(GB/s)", "(GB/s)");
  fflush(stdout);
}

/* ---- the op driver --------------------------------------------------------
 */

static void run_size(perf_ctx *c, perf_op op, const perf_shape *sh) {
  perf_row w = {op, *sh, c->o->iters > 0 ? c->o->iters : auto_iters(sh->bytes),
                0, -1};
  perf_fill(c, op, sh);
  perf_times t = time_size(c, op, sh, w.iters);
  w.time_s = op == PERF_SENDRECV ? t.slowest / 2 : t.slowest; /* one way */
  if (c->o->check) {
    w.wrong = check_size(c, op, sh);
    c->wrong += w.wrong;
  }
  print_row(c, &w);
  if (c->o->per_rank)
    print_per_rank(c, op == PERF_SENDRECV ? t.own / 2 : t.own);
}

void perf_run_op(perf_ctx *c, perf_op op) {
  print_op_header(c, op);
  if (op == PERF_SENDRECV && c->size < 2) {
    if (c->rank == 0)
      printf("# sendrecv needs 2 ranks: skipped\n");
    return;
  }
  size_t esz = dc_dtype_size(c->o->dtype), last = 0;
  for (size_t k = 0; k < c->o->nsizes; k++) {
    perf_shape sh = perf_shape_for(op, c->o->sizes[k], c->size, esz);
    if (sh.bytes == last)
      continue; /* rounding made it a repeat */
    last = sh.bytes;
    run_size(c, op, &sh);
  }
}

void perf_print_summary(const perf_ctx *c) {
  if (c->rank != 0)
    return;
  printf("# avg busbw %.3f GB/s over %d sizes",
         c->rows ? c->busbw_sum / c->rows : 0.0, c->rows);
  if (c->o->check)
    printf(", %lld wrong elements %s", c->wrong, c->wrong ? "FAILED" : "OK");
  printf("\n");
  fflush(stdout);
}
