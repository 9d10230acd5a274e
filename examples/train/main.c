/* distcomm train: data-parallel training, the C version of the training loop
 * in the MLX distributed docs (seed 002).
 *
 * Every rank holds the whole model. Each step, every rank draws the same
 * global batch from the seed and takes its own contiguous slice of it; it
 * computes the loss and gradient on that slice, then dc_average_gradients()
 * makes every rank's gradient the mean over the whole global batch, so every
 * rank applies the same update and the weights never drift apart. With one
 * rank the same program is ordinary single-process training: N ranks follow
 * the same loss curve up to the rounding of a different summation order.
 *
 *   distcomm-launch -n 2 -- examples/train [--steps N] [--batch B] ...
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distcomm.h"
#include "train.h"

typedef struct options {
  int steps, batch, hidden, layers, points, classes, log_every, adam, overlap;
  double lr;
  unsigned long long seed;
  long long bucket_bytes;
  int bucket_set; /* --bucket-bytes given */
} options;

static const char usage[] =
    "usage: train [--steps N] [--batch B] [--hidden H] [--layers L] [--lr X]\n"
    "             [--seed S] [--bucket-bytes N] [--overlap]\n"
    "             [--optimizer adam|sgd] [--points N] [--classes K]\n"
    "             [--log-every N]\n"
    "Trains an MLP (L hidden layers of width H, default 2 x 64) on generated\n"
    "spirals, data-parallel over the ranks of the distcomm world group. B\n"
    "must divide evenly by the number of ranks. --bucket-bytes 0 averages the\n"
    "gradients one tensor at a time. --overlap starts each layer's gradient\n"
    "bucket as soon as backward produces it (the last layer first) and waits\n"
    "once after backward; its buckets default to 1 MiB, so that each large\n"
    "layer travels on its own. --hidden 1024 --layers 4 --batch 16 is a size\n"
    "at which communication matters.\n";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- options ----------------------------------------------------------------
 */

/* Reads a whole-string integer in [lo, hi]; on failure writes the one-line
 * reason into err. */
static int parse_int(const char *name, const char *s, long long lo,
                     long long hi, long long *out, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    snprintf(err, errlen, "--%s must be an integer from %lld to %lld, got '%s'",
             name, lo, hi, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_option(int id, const char *name, const char *arg, options *o,
                        char *err, size_t errlen) {
  long long v = 0;
  int rc = 0;
  switch (id) {
  case 's':
    rc = parse_int(name, arg, 1, INT_MAX, &v, err, errlen);
    o->steps = (int)v;
    break;
  case 'b':
    rc = parse_int(name, arg, 1, 1 << 20, &v, err, errlen);
    o->batch = (int)v;
    break;
  case 'h':
    rc = parse_int(name, arg, 1, 4096, &v, err, errlen);
    o->hidden = (int)v;
    break;
  case 'y':
    rc = parse_int(name, arg, 1, MLP_MAX_LAYERS - 1, &v, err, errlen);
    o->layers = (int)v;
    break;
  case 'O':
    o->overlap = 1;
    break;
  case 'p':
    rc = parse_int(name, arg, 10, 10000000, &v, err, errlen);
    o->points = (int)v;
    break;
  case 'k':
    rc = parse_int(name, arg, 2, 64, &v, err, errlen);
    o->classes = (int)v;
    break;
  case 'L':
    rc = parse_int(name, arg, 1, INT_MAX, &v, err, errlen);
    o->log_every = (int)v;
    break;
  case 'S':
    rc = parse_int(name, arg, 0, LLONG_MAX, &v, err, errlen);
    o->seed = (unsigned long long)v;
    break;
  case 'B':
    rc = parse_int(name, arg, LLONG_MIN, LLONG_MAX, &v, err, errlen);
    o->bucket_bytes = v;
    o->bucket_set = 1;
    break;
  case 'l': {
    char *end;
    o->lr = strtod(arg, &end);
    if (end == arg || *end || !(o->lr > 0) || !isfinite(o->lr)) {
      snprintf(err, errlen, "--lr must be a positive number, got '%s'", arg);
      rc = -1;
    }
    break;
  }
  case 'o':
    if (strcmp(arg, "adam") && strcmp(arg, "sgd")) {
      snprintf(err, errlen, "--optimizer must be adam or sgd, got '%s'", arg);
      rc = -1;
    }
    o->adam = strcmp(arg, "adam") == 0;
    break;
  }
  return rc;
}

/* 0: run; 1: --help printed; -1: err holds a one-line message. */
static int parse_options(int argc, char **argv, int ranks, options *o,
                         char *err, size_t errlen) {
  static const struct option longs[] = {
      {"steps", required_argument, NULL, 's'},
      {"batch", required_argument, NULL, 'b'},
      {"hidden", required_argument, NULL, 'h'},
      {"layers", required_argument, NULL, 'y'},
      {"overlap", no_argument, NULL, 'O'},
      {"lr", required_argument, NULL, 'l'},
      {"seed", required_argument, NULL, 'S'},
      {"bucket-bytes", required_argument, NULL, 'B'},
      {"optimizer", required_argument, NULL, 'o'},
      {"points", required_argument, NULL, 'p'},
      {"classes", required_argument, NULL, 'k'},
      {"log-every", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'H'},
      {NULL, 0, NULL, 0}};
  *o = (options){.steps = 300,
                 .batch = 256,
                 .hidden = 64,
                 .layers = 2,
                 .points = 6000,
                 .classes = 3,
                 .log_every = 25,
                 .adam = 1,
                 .lr = 0.01,
                 .seed = 1,
                 .bucket_bytes = DC_ALL_REDUCE_SIZE_DEFAULT};
  opterr = 0; /* our own messages: one line, from rank 0 only */
  int id, at;
  while ((id = getopt_long(argc, argv, "", longs, &at)) != -1) {
    if (id == 'H')
      return 1;
    if (id == '?') {
      if (optopt) /* a known option without its value */
        snprintf(err, errlen, "%s needs a value (see --help)",
                 argv[optind - 1]);
      else
        snprintf(err, errlen, "unknown option '%s' (see --help)",
                 argv[optind - 1]);
      return -1;
    }
    if (parse_option(id, longs[at].name, optarg, o, err, errlen))
      return -1;
  }
  if (o->overlap && !o->bucket_set)
    o->bucket_bytes = 1 << 20;
  if (optind < argc) {
    snprintf(err, errlen, "unexpected argument '%s' (see --help)",
             argv[optind]);
    return -1;
  }
  if (o->batch % ranks) {
    snprintf(err, errlen,
             "--batch %d does not split evenly over %d ranks (each rank takes "
             "batch / ranks samples)",
             o->batch, ranks);
    return -1;
  }
  if (o->batch > o->points) {
    snprintf(err, errlen, "--batch %d is larger than the data set (%d points)",
             o->batch, o->points);
    return -1;
  }
  return 0;
}

/* ---- the run
 * ------------------------------------------------------------------- */

typedef struct run {
  dc_group *g;
  int rank, size;
  options opt;
  dataset train, test;
  sampler batches;
  mlp model, grad;
  workspace ws;
  optimizer opt_state;
  int *idx;   /* the global batch's indices */
  float loss; /* this rank's mean loss, averaged along with the grads */
  dc_tensor list[2 * MLP_MAX_LAYERS + 1];
  size_t ntensors;
  dc_grad_average *avg; /* --overlap: the step's averaging in flight */
  double t_compute, t_comm, t_ready; /* t_ready: this step's ready calls */
  unsigned long long sums_per_step;
} run;

static void die(run *r, const char *what, dc_status st) {
  fprintf(stderr, "train: rank %d: %s failed: %s (%s)\n", r->rank, what,
          dc_strerror(st), dc_group_last_error(r->g));
  exit(1);
}

static int setup(run *r) {
  options *o = &r->opt;
  int n_test = o->points / 5; /* a held-out fifth */
  if (spirals_make(o->seed, o->classes, o->points, n_test, &r->train,
                   &r->test) ||
      sampler_init(&r->batches, o->points, o->seed) ||
      mlp_init(&r->model, 2, o->hidden, o->classes, o->layers + 1) ||
      mlp_init(&r->grad, 2, o->hidden, o->classes, o->layers + 1) ||
      workspace_init(&r->ws, &r->model, o->batch / r->size) ||
      optimizer_init(&r->opt_state, o->adam, (float)o->lr, r->model.nparams) ||
      !(r->idx = malloc((size_t)o->batch * sizeof *r->idx)))
    return -1;
  /* Same seed, same weights on every rank: no broadcast needed. */
  mlp_randomize(&r->model, o->seed);
  /* What gets averaged each step: every weight and bias gradient, and the
   * loss itself, which rides along in the same bucket for free instead of
   * costing a reduction of its own. --overlap lists the layers in the
   * order backward finishes them, the last first, so each bucket can start
   * while backward computes the layers before it. */
  size_t n = 0;
  int layers = r->model.layers;
  for (int j = 0; j < layers; j++) {
    layer *l = &r->grad.l[o->overlap ? layers - 1 - j : j];
    r->list[n++] = (dc_tensor){l->w, (size_t)l->out * l->in, DC_FLOAT32};
    r->list[n++] = (dc_tensor){l->b, (size_t)l->out, DC_FLOAT32};
  }
  r->list[n++] = (dc_tensor){&r->loss, 1, DC_FLOAT32};
  r->ntensors = n;
  return 0;
}

static void teardown(run *r) {
  dataset_free(&r->train);
  dataset_free(&r->test);
  sampler_free(&r->batches);
  mlp_free(&r->model);
  mlp_free(&r->grad);
  workspace_free(&r->ws);
  optimizer_free(&r->opt_state);
  free(r->idx);
}

static void print_header(const run *r) {
  const options *o = &r->opt;
  size_t bytes = (r->model.nparams + 1) * sizeof(float);
  printf("distcomm train: %d rank%s (%s), MLP 2-%dx%d-%d on %d spiral points "
         "(%d arms), batch %d (%d per rank), %s lr %g, %d steps, seed %llu\n",
         r->size, r->size == 1 ? "" : "s", dc_group_backend(r->g), o->hidden,
         o->layers, o->classes, o->points, o->classes, o->batch,
         o->batch / r->size, o->adam ? "Adam" : "SGD", o->lr, o->steps,
         o->seed);
  char bucket[64];
  long long bb = o->bucket_bytes;
  if (bb <= 0)
    snprintf(bucket, sizeof bucket, "--bucket-bytes %lld: one per tensor", bb);
  else if (bb % (1024 * 1024) == 0)
    snprintf(bucket, sizeof bucket, "buckets of %lld MiB", bb >> 20);
  else
    snprintf(bucket, sizeof bucket, "buckets of %lld bytes", bb);
  printf("gradients: %zu tensors + the loss, %zu floats (%.1f KiB), "
         "averaged in %llu all_sum%s per step (%s%s)\n",
         r->ntensors - 1, r->model.nparams + 1, (double)bytes / 1024,
         r->sums_per_step, r->sums_per_step == 1 ? "" : "s", bucket,
         o->overlap ? ", overlapped with backward" : "");
  fflush(stdout);
}

/* --overlap: backward finished layer k; its weight and bias are list
 * entries 2j and 2j + 1 with j = layers - 1 - k. The time spent here
 * (packing, queueing) counts as communication, not compute. */
static void layer_done(void *arg, int k) {
  run *r = arg;
  double t0 = now();
  size_t j = (size_t)(r->model.layers - 1 - k);
  dc_status st = dc_average_gradients_ready(r->avg, 2 * j);
  if (st == DC_OK)
    st = dc_average_gradients_ready(r->avg, 2 * j + 1);
  if (st != DC_OK)
    die(r, "dc_average_gradients_ready", st);
  r->t_ready += now() - t0;
}

/* One step: this rank's slice of the global batch, forward and backward,
 * the bucketed average, the update. Returns the global batch's mean loss.
 * Communication time is what the step spends on it: with --overlap, the
 * ready calls and the final wait, not what ran behind backward. */
static float step(run *r) {
  int local = r->opt.batch / r->size;
  sampler_next(&r->batches, r->opt.batch, r->idx);
  double t0 = now();
  dc_status st = DC_OK;
  r->t_ready = 0;
  if (r->opt.overlap) {
    st = dc_average_gradients_start(r->g, r->list, r->ntensors,
                                    r->opt.bucket_bytes, &r->avg);
    if (st != DC_OK)
      die(r, "dc_average_gradients_start", st);
  }
  r->loss =
      mlp_loss_grad(&r->model, &r->train, r->idx + r->rank * local, local,
                    &r->grad, &r->ws, r->opt.overlap ? layer_done : NULL, r);
  double t1 = now();
  if (r->opt.overlap) /* the loss is the last entry: taken as ready here */
    st = dc_average_gradients_wait(r->avg);
  else
    st = dc_average_gradients(r->g, r->list, r->ntensors, r->opt.bucket_bytes);
  r->avg = NULL;
  if (st != DC_OK)
    die(r,
        r->opt.overlap ? "dc_average_gradients_wait" : "dc_average_gradients",
        st);
  double t2 = now();
  optimizer_step(&r->opt_state, &r->model, &r->grad);
  r->t_compute += (t1 - t0 - r->t_ready) + (now() - t2);
  r->t_comm += (t2 - t1) + r->t_ready;
  return r->loss;
}

/* Held-out accuracy: each rank scores its own slice of the test set and one
 * all_sum adds up the counts. */
static double accuracy(run *r) {
  int n = r->test.n;
  int first = (int)((long long)n * r->rank / r->size);
  int last = (int)((long long)n * (r->rank + 1) / r->size);
  long long correct =
      mlp_count_correct(&r->model, &r->test, first, last - first, &r->ws);
  dc_status st = dc_all_sum(r->g, &correct, &correct, 1, DC_INT64);
  if (st != DC_OK)
    die(r, "all_sum of the accuracy", st);
  return 100.0 * (double)correct / n;
}

/* FNV-1a of the weights' bytes: equal checksums on every rank mean the
 * ranks really did apply identical updates, bit for bit. */
static uint64_t checksum(const mlp *m) {
  const unsigned char *p = (const unsigned char *)m->params;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < m->nparams * sizeof *m->params; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static int check_weights(run *r) {
  uint64_t mine = checksum(&r->model), hi = mine, lo = mine;
  dc_status st = dc_all_max(r->g, &hi, &hi, 1, DC_UINT64);
  if (st == DC_OK)
    st = dc_all_min(r->g, &lo, &lo, 1, DC_UINT64);
  if (st != DC_OK)
    die(r, "checksum exchange", st);
  if (hi != lo) {
    fprintf(stderr,
            "train: rank %d: WEIGHTS DIFFER BETWEEN RANKS: mine "
            "0x%016" PRIx64 ", min 0x%016" PRIx64 ", max 0x%016" PRIx64 "\n",
            r->rank, mine, lo, hi);
    return -1;
  }
  if (r->rank == 0)
    printf("weights identical on all %d rank%s (checksum 0x%016" PRIx64 ")\n",
           r->size, r->size == 1 ? "" : "s", mine);
  return 0;
}

static void train(run *r) {
  unsigned long long before = dc_group_collectives(r->g);
  double start = now();
  for (int s = 1; s <= r->opt.steps; s++) {
    float loss = step(r);
    if (s == 1) {
      r->sums_per_step = dc_group_collectives(r->g) - before;
      if (r->rank == 0)
        print_header(r);
    }
    if (r->rank == 0 &&
        (s == 1 || s % r->opt.log_every == 0 || s == r->opt.steps)) {
      printf("step %4d  loss %.6f\n", s, loss);
      fflush(stdout);
    }
  }
  double elapsed = now() - start;
  double acc = accuracy(r);
  if (r->rank == 0)
    printf("held-out accuracy %.2f%% (%d points) | %.0f samples/s | "
           "communication %.0f%% of step time\n",
           acc, r->test.n, (double)r->opt.steps * r->opt.batch / elapsed,
           100.0 * r->t_comm / (r->t_comm + r->t_compute));
  if (r->rank == 0)
    printf("per step: %.3f ms, compute %.3f ms, communication %.3f ms%s\n",
           1e3 * elapsed / r->opt.steps, 1e3 * r->t_compute / r->opt.steps,
           1e3 * r->t_comm / r->opt.steps,
           r->opt.overlap ? " (not hidden behind backward)" : "");
}

int main(int argc, char **argv) {
  run r = {0};
  dc_status st = dc_init("any", 0, &r.g);
  if (st != DC_OK) {
    fprintf(stderr, "train: dc_init failed: %s (%s)\n", dc_strerror(st),
            dc_last_error());
    return 1;
  }
  r.rank = dc_group_rank(r.g);
  r.size = dc_group_size(r.g);
  char err[256];
  int rc = parse_options(argc, argv, r.size, &r.opt, err, sizeof err);
  if (rc) {
    /* Every rank parsed the same arguments and stops; one of them says why. */
    if (r.rank == 0 && rc > 0)
      fputs(usage, stdout);
    else if (r.rank == 0)
      fprintf(stderr, "train: %s\n", err);
    dc_group_free(r.g);
    return rc > 0 ? 0 : 2;
  }
  if (setup(&r)) {
    fprintf(stderr, "train: rank %d: out of memory\n", r.rank);
    return 1;
  }
  train(&r);
  rc = check_weights(&r);
  teardown(&r);
  dc_group_free(r.g);
  return rc ? 1 : 0;
}
