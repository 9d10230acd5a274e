/* distcomm tensor_parallel: one two-layer MLP, y = W2 relu(W1 x + b1) + b2,
 * split over the ranks the Megatron way (MLX's shard_linear):
 *
 *   layer 1, "all-to-sharded": rank r holds a block of rows of W1 and the
 *     matching slice of b1. Every rank has the whole input x, so it computes
 *     its slice of the hidden activations with no communication at all.
 *   layer 2, "sharded-to-all": rank r holds the same block of columns of W2,
 *     which is exactly the slice of the hidden vector it already has. Its
 *     partial product W2[:, block] h[block] is one term of the full sum;
 *     one all_sum adds the terms up, then b2 is added (once, after the sum,
 *     so it is not counted N times).
 *
 * One all_sum per forward pass, of batch x out floats, whatever the hidden
 * width: that is why the pair is split this way. The hidden width need not
 * divide by the ranks: like MLX, the first ranks take one row more.
 *
 * Every rank builds the whole model from the seed and keeps its shard (a real
 * program would load only its shard). --check makes every rank compute the
 * single-process result too and compare; it exits 1 on any difference beyond
 * float32 rounding.
 */
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distcomm.h"

typedef struct options {
  int batch, in, hidden, out, check;
  unsigned long long seed;
} options;

/* The whole model and input, as a single process would hold them. */
typedef struct model {
  int in, hidden, out;
  float *w1, *b1; /* hidden x in, hidden */
  float *w2, *b2; /* out x hidden, out */
} model;

/* What one rank holds: hidden rows [lo, hi) of layer 1, the same columns of
 * layer 2 (copied out to a compact out x (hi - lo) block), and all of b2. */
typedef struct shard {
  int lo, hi;
  const float *w1, *b1; /* rows lo..hi of the full W1, b1 */
  float *w2;            /* out x (hi - lo) */
  const float *b2;
} shard;

static const char usage[] =
    "usage: tensor_parallel [--batch B] [--in D] [--hidden H] [--out O]\n"
    "                       [--seed S] [--check]\n"
    "A two-layer MLP split over the ranks (all-to-sharded, then\n"
    "sharded-to-all); --check compares with the single-process result.\n";

/* ---- helpers ------------------------------------------------------------- */

static uint64_t mix(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* n values uniform in [-scale, scale), the same on every rank. */
static float *random_floats(uint64_t *s, size_t n, double scale) {
  float *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; i++)
    p[i] = (float)(((double)(mix(s) >> 11) * 0x1.0p-53 * 2 - 1) * scale);
  return p;
}

/* y[b][o] = bias[o] + w[o] . x[b] for o in [0, rows); w rows are k long. */
static void linear(const float *x, int batch, int k, const float *w,
                   const float *bias, int rows, float *y) {
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < rows; o++) {
      const float *wr = w + (size_t)o * k, *xr = x + (size_t)b * k;
      float acc = 0;
      for (int i = 0; i < k; i++)
        acc += wr[i] * xr[i];
      y[(size_t)b * rows + o] = bias ? acc + bias[o] : acc;
    }
}

static void relu(float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = x[i] > 0 ? x[i] : 0;
}

/* ---- options
 * ----------------------------------------------------------------- */

static int parse_int(const char *name, const char *s, long long lo,
                     long long hi, long long *out, char *err, size_t len) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    snprintf(err, len, "--%s must be an integer from %lld to %lld, got '%s'",
             name, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

/* 0: run; 1: --help printed; -1: err holds a one-line message. */
static int parse_options(int argc, char **argv, int ranks, options *o,
                         char *err, size_t len) {
  static const struct option longs[] = {
      {"batch", required_argument, NULL, 'b'},
      {"in", required_argument, NULL, 'i'},
      {"hidden", required_argument, NULL, 'h'},
      {"out", required_argument, NULL, 'o'},
      {"seed", required_argument, NULL, 's'},
      {"check", no_argument, NULL, 'c'},
      {"help", no_argument, NULL, 'H'},
      {NULL, 0, NULL, 0}};
  *o = (options){.batch = 8, .in = 512, .hidden = 1024, .out = 256, .seed = 7};
  opterr = 0;
  int id, at;
  while ((id = getopt_long(argc, argv, "", longs, &at)) != -1) {
    long long v = 0;
    int *dst = id == 'b'   ? &o->batch
               : id == 'i' ? &o->in
               : id == 'h' ? &o->hidden
               : id == 'o' ? &o->out
                           : NULL;
    if (id == 'H')
      return 1;
    if (id == '?') {
      if (optopt) /* a known option without its value */
        snprintf(err, len, "%s needs a value (see --help)", argv[optind - 1]);
      else
        snprintf(err, len, "unknown option '%s' (see --help)",
                 argv[optind - 1]);
      return -1;
    }
    if (id == 'c') {
      o->check = 1;
    } else if (id == 's') {
      if (parse_int("seed", optarg, 0, LLONG_MAX, &v, err, len))
        return -1;
      o->seed = (unsigned long long)v;
    } else if (parse_int(longs[at].name, optarg, 1, 1 << 16, &v, err, len)) {
      return -1;
    } else {
      *dst = (int)v;
    }
  }
  if (optind < argc) {
    snprintf(err, len, "unexpected argument '%s' (see --help)", argv[optind]);
    return -1;
  }
  if (o->hidden < ranks) {
    snprintf(err, len,
             "--hidden %d is smaller than the %d ranks: every rank "
             "needs at least one hidden unit",
             o->hidden, ranks);
    return -1;
  }
  return 0;
}

/* ---- model, shard, forward passes
 * -------------------------------------------- */

static int model_make(model *m, const options *o, float **x) {
  uint64_t s = o->seed * 0x2545F4914F6CDD1Dull + 1;
  m->in = o->in;
  m->hidden = o->hidden;
  m->out = o->out;
  /* uniform(+-1/sqrt(fan_in)), the default init of nn.Linear */
  m->w1 = random_floats(&s, (size_t)o->hidden * o->in, 1 / sqrt(o->in));
  m->b1 = random_floats(&s, (size_t)o->hidden, 1 / sqrt(o->in));
  m->w2 = random_floats(&s, (size_t)o->out * o->hidden, 1 / sqrt(o->hidden));
  m->b2 = random_floats(&s, (size_t)o->out, 1 / sqrt(o->hidden));
  *x = random_floats(&s, (size_t)o->batch * o->in, 1.0);
  return m->w1 && m->b1 && m->w2 && m->b2 && *x ? 0 : -1;
}

static void model_free(model *m) {
  free(m->w1);
  free(m->b1);
  free(m->w2);
  free(m->b2);
}

/* Rank r of n gets hidden units [lo, hi): an even split, the first
 * hidden % n ranks one more (MLX's default for uneven shards). */
static int shard_make(shard *sh, const model *m, int rank, int n) {
  int base = m->hidden / n, extra = m->hidden % n;
  sh->lo = rank * base + (rank < extra ? rank : extra);
  sh->hi = sh->lo + base + (rank < extra);
  int k = sh->hi - sh->lo;
  sh->w1 = m->w1 + (size_t)sh->lo * m->in;
  sh->b1 = m->b1 + sh->lo;
  sh->b2 = m->b2;
  sh->w2 = malloc((size_t)m->out * k * sizeof *sh->w2);
  if (!sh->w2)
    return -1;
  for (int o = 0; o < m->out; o++)
    memcpy(sh->w2 + (size_t)o * k, m->w2 + (size_t)o * m->hidden + sh->lo,
           (size_t)k * sizeof *sh->w2);
  return 0;
}

/* The single-process forward pass; h gets the hidden activations. */
static void forward_full(const model *m, const float *x, int batch, float *h,
                         float *y) {
  linear(x, batch, m->in, m->w1, m->b1, m->hidden, h);
  relu(h, (size_t)batch * m->hidden);
  linear(h, batch, m->hidden, m->w2, m->b2, m->out, y);
}

/* The sharded forward pass; h gets this rank's slice of the activations. */
static dc_status forward_sharded(dc_group *g, const shard *sh, const model *m,
                                 const float *x, int batch, float *h,
                                 float *y) {
  int k = sh->hi - sh->lo;
  /* all-to-sharded: the full input in, this rank's hidden slice out */
  linear(x, batch, m->in, sh->w1, sh->b1, k, h);
  relu(h, (size_t)batch * k);
  /* sharded-to-all: a partial product from the slice, summed over ranks */
  linear(h, batch, k, sh->w2, NULL, m->out, y);
  dc_status st = dc_all_sum(g, y, y, (size_t)batch * m->out, DC_FLOAT32);
  if (st != DC_OK)
    return st;
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < m->out; o++)
      y[(size_t)b * m->out + o] += sh->b2[o];
  return DC_OK;
}

/* ---- the comparison
 * ------------------------------------------------------------ */

typedef struct compare {
  double max_abs, worst_ratio; /* worst |diff| / allowed; <= 1 passes */
  int hidden_exact;
} compare;

/* Two sums of the same terms in different orders differ by at most about
 * 2 * n * eps * sum |terms| (the classic bound for recursive summation), so
 * each output gets that allowance; the hidden slice is computed with the
 * same operations in the same order and must match bit for bit. */
static compare compare_outputs(const model *m, const shard *sh, int batch,
                               const float *h_full, const float *h_shard,
                               const float *y_ref, const float *y) {
  compare c = {0, 0, 1};
  int k = sh->hi - sh->lo;
  for (int b = 0; b < batch; b++)
    if (memcmp(h_full + (size_t)b * m->hidden + sh->lo, h_shard + (size_t)b * k,
               (size_t)k * sizeof(float)))
      c.hidden_exact = 0;
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < m->out; o++) {
      double mag = fabs(m->b2[o]);
      for (int j = 0; j < m->hidden; j++)
        mag += fabs((double)m->w2[(size_t)o * m->hidden + j] *
                    h_full[(size_t)b * m->hidden + j]);
      double allowed = 2.0 * (m->hidden + 1) * FLT_EPSILON * mag + FLT_MIN;
      size_t i = (size_t)b * m->out + o;
      double d = fabs((double)y[i] - y_ref[i]);
      c.max_abs = d > c.max_abs ? d : c.max_abs;
      c.worst_ratio = d / allowed > c.worst_ratio ? d / allowed : c.worst_ratio;
    }
  return c;
}

/* ---- main
 * ---------------------------------------------------------------------- */

static int fail(int rank, const char *what, dc_status st, const dc_group *g) {
  fprintf(stderr, "tensor_parallel: rank %d: %s: %s (%s)\n", rank, what,
          dc_strerror(st), g ? dc_group_last_error(g) : dc_last_error());
  return 1;
}

static int run(dc_group *g, const options *o) {
  int rank = dc_group_rank(g), n = dc_group_size(g);
  model m;
  shard sh = {0};
  float *x = NULL;
  size_t ysize = (size_t)o->batch * o->out;
  float *h_full = malloc((size_t)o->batch * o->hidden * sizeof(float));
  float *h = malloc((size_t)o->batch * o->hidden * sizeof(float));
  float *y_ref = malloc(ysize * sizeof(float)),
        *y = malloc(ysize * sizeof(float));
  if (model_make(&m, o, &x) || shard_make(&sh, &m, rank, n) || !h_full || !h ||
      !y_ref || !y) {
    fprintf(stderr, "tensor_parallel: rank %d: out of memory\n", rank);
    return 1;
  }
  if (rank == 0)
    printf("distcomm tensor_parallel: %d rank%s (%s), MLP %d-%d-%d, batch %d, "
           "seed %llu\n  layer 1 all-to-sharded: rank 0 holds rows %d..%d of "
           "W1 (%d of %d), no communication\n  layer 2 sharded-to-all: the "
           "same columns of W2, one all_sum of %zu floats, b2 added once\n",
           n, n == 1 ? "" : "s", dc_group_backend(g), o->in, o->hidden, o->out,
           o->batch, o->seed, sh.lo, sh.hi - 1, sh.hi - sh.lo, o->hidden,
           ysize);
  unsigned long long before = dc_group_collectives(g);
  dc_status st = forward_sharded(g, &sh, &m, x, o->batch, h, y);
  if (st != DC_OK)
    return fail(rank, "all_sum", st, g);
  unsigned long long sums = dc_group_collectives(g) - before;
  int rc = 0;
  if (o->check || rank == 0) {
    forward_full(&m, x, o->batch, h_full, y_ref);
    compare c = compare_outputs(&m, &sh, o->batch, h_full, h, y_ref, y);
    int ok = c.hidden_exact && c.worst_ratio <= 1 && sums == 1;
    if (o->check)
      printf("rank %d: %s: hidden slice %s, output max |diff| %.3g (%.3g of "
             "the float32 rounding bound), %llu all_sum\n",
             rank, ok ? "check passed" : "CHECK FAILED",
             c.hidden_exact ? "bit-identical" : "DIFFERS", c.max_abs,
             c.worst_ratio, sums);
    else
      printf("output [%d x %d] %s the single-process result: max |diff| "
             "%.3g, y[0][0] = %.6f\n",
             o->batch, o->out, ok ? "matches" : "DIFFERS FROM", c.max_abs,
             y[0]);
    rc = ok ? 0 : 1;
  }
  model_free(&m);
  free(sh.w2);
  free(x);
  free(h_full);
  free(h);
  free(y_ref);
  free(y);
  return rc;
}

int main(int argc, char **argv) {
  dc_group *g = NULL;
  dc_status st = dc_init("any", 0, &g);
  if (st != DC_OK)
    return fail(-1, "dc_init", st, NULL);
  int rank = dc_group_rank(g);
  options o;
  char err[256];
  int rc = parse_options(argc, argv, dc_group_size(g), &o, err, sizeof err);
  if (rc) {
    /* every rank stops; rank 0 says why, in one line */
    if (rank == 0 && rc > 0)
      fputs(usage, stdout);
    else if (rank == 0)
      fprintf(stderr, "tensor_parallel: %s\n", err);
    dc_group_free(g);
    return rc > 0 ? 0 : 2;
  }
  rc = run(g, &o);
  dc_group_free(g);
  return rc;
}
