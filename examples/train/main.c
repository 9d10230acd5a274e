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
 * --elastic (docs/reliability.md): when an op fails because a rank is
 * lost, the survivors shrink the group, take the new rank 0's state, redo
 * the failed step and go on, each batch cut among them (recover()).
 *
 *   distcomm-launch -n 2 -- examples/train [--steps N] [--batch B] ...
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distcomm.h"
#include "train.h"

typedef struct options {
  int steps, batch, hidden, layers, points, classes, log_every, adam, overlap;
  int elastic, die_at, die_rank; /* die_at 0: nobody dies */
  double lr;
  unsigned long long seed;
  long long bucket_bytes;
  int bucket_set; /* --bucket-bytes given */
} options;

static const char usage[] =
    "usage: train [--steps N] [--batch B] [--hidden H] [--layers L] [--lr X]\n"
    "             [--seed S] [--bucket-bytes N] [--overlap]\n"
    "             [--optimizer adam|sgd] [--points N] [--classes K]\n"
    "             [--log-every N] [--elastic] [--die-at STEP [--die-rank R]]\n"
    "Trains an MLP (L hidden layers of width H, default 2 x 64) on generated\n"
    "spirals, data-parallel over the ranks of the distcomm world group. B\n"
    "must divide evenly by the number of ranks. --bucket-bytes 0 averages the\n"
    "gradients one tensor at a time. --overlap starts each layer's gradient\n"
    "bucket as soon as backward produces it (the last layer first) and waits\n"
    "once after backward; its buckets default to 1 MiB, so that each large\n"
    "layer travels on its own. --hidden 1024 --layers 4 --batch 16 is a size\n"
    "at which communication matters.\n"
    "--elastic: when a rank is lost, the others shrink the group, take the\n"
    "new rank 0's weights, optimizer state and step, share each batch among\n"
    "themselves and go on (start with distcomm-launch --keep-going).\n"
    "--die-at STEP: rank R (default 1) kills itself (SIGKILL) as it starts\n"
    "step STEP, to show that.\n";

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
  case 'E':
    o->elastic = 1;
    break;
  case 'D':
    rc = parse_int(name, arg, 1, INT_MAX, &v, err, errlen);
    o->die_at = (int)v;
    break;
  case 'R':
    rc = parse_int(name, arg, 0, INT_MAX, &v, err, errlen);
    o->die_rank = (int)v;
    break;
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
      {"elastic", no_argument, NULL, 'E'},
      {"die-at", required_argument, NULL, 'D'},
      {"die-rank", required_argument, NULL, 'R'},
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
                 .die_rank = 1,
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
  if (o->die_at && o->die_rank >= ranks) {
    snprintf(err, errlen, "--die-rank %d is not one of the %d ranks",
             o->die_rank, ranks);
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
  int said_header;
  /* --elastic */
  int world_rank; /* the rank at the start: --die-rank names it */
  int *members;   /* the world ranks of g's members, in rank order */
  int nmembers;
  float scale;           /* share * size / batch: 1 unless shares differ */
  dc_status step_st;     /* the step's first failure */
  const char *failed_op; /* and what failed */
  int redone;            /* the step redone after a shrink, 0: none */
  double t_lost, t_shrunk, t_synced; /* that recovery's timeline */
} run;

static void die(run *r, const char *what, dc_status st) {
  fprintf(stderr, "train: rank %d: %s failed: %s (%s)\n", r->rank, what,
          dc_strerror(st), dc_group_last_error(r->g));
  exit(1);
}

/* A failed op: the end without --elastic; with it, noted for recover(). */
static dc_status failed(run *r, const char *what, dc_status st) {
  if (!r->opt.elastic)
    die(r, what, st);
  if (r->step_st == DC_OK) {
    r->step_st = st;
    r->failed_op = what;
  }
  return st;
}

/* Rank k's share of the global batch starts here: contiguous slices, the
 * same as batch / size each when that divides (always at the start). */
static int share_first(const run *r, int k) {
  return (int)((long long)r->opt.batch * k / r->size);
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
      !(r->idx = malloc((size_t)o->batch * sizeof *r->idx)) ||
      !(r->members = malloc((size_t)r->size * sizeof *r->members)))
    return -1;
  for (int k = 0; k < r->size; k++)
    r->members[k] = k;
  r->nmembers = r->size;
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
  free(r->members);
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
/* Uneven shares (after a shrink): a rank's gradient is the mean over its
 * share, so it is weighted by share * size / batch before the average, to
 * make the average the global batch's mean. */
static void scale_layer(run *r, int k) {
  layer *l = &r->grad.l[k];
  for (size_t i = 0; i < (size_t)l->out * l->in; i++)
    l->w[i] *= r->scale;
  for (int i = 0; i < l->out; i++)
    l->b[i] *= r->scale;
}

static void layer_done(void *arg, int k) {
  run *r = arg;
  if (r->step_st != DC_OK) /* a peer is lost: the wait reports it */
    return;
  double t0 = now();
  if (r->scale != 1.0f)
    scale_layer(r, k);
  size_t j = (size_t)(r->model.layers - 1 - k);
  dc_status st = dc_average_gradients_ready(r->avg, 2 * j);
  if (st == DC_OK)
    st = dc_average_gradients_ready(r->avg, 2 * j + 1);
  if (st != DC_OK)
    failed(r, "dc_average_gradients_ready", st);
  r->t_ready += now() - t0;
}

/* One step: this rank's slice of the global batch, forward and backward,
 * the bucketed average, the update. Returns the global batch's mean loss.
 * Communication time is what the step spends on it: with --overlap, the
 * ready calls and the final wait, not what ran behind backward. */
static dc_status step(run *r) {
  int first = share_first(r, r->rank);
  int local = share_first(r, r->rank + 1) - first;
  r->scale = (float)((double)local * r->size / r->opt.batch);
  sampler_next(&r->batches, r->opt.batch, r->idx);
  double t0 = now();
  dc_status st = DC_OK;
  r->t_ready = 0;
  r->step_st = DC_OK;
  if (r->opt.overlap) {
    st = dc_average_gradients_start(r->g, r->list, r->ntensors,
                                    r->opt.bucket_bytes, &r->avg);
    if (st != DC_OK)
      return failed(r, "dc_average_gradients_start", st);
  }
  r->loss = mlp_loss_grad(&r->model, &r->train, r->idx + first, local, &r->grad,
                          &r->ws, r->opt.overlap ? layer_done : NULL, r);
  if (r->scale != 1.0f) {
    r->loss *= r->scale;
    for (int k = 0; !r->opt.overlap && k < r->model.layers; k++)
      scale_layer(r, k);
  }
  double t1 = now();
  if (r->opt.overlap) /* the loss is the last entry: taken as ready here */
    st = dc_average_gradients_wait(r->avg);
  else
    st = dc_average_gradients(r->g, r->list, r->ntensors, r->opt.bucket_bytes);
  r->avg = NULL;
  if (st != DC_OK)
    failed(r,
           r->opt.overlap ? "dc_average_gradients_wait"
                          : "dc_average_gradients",
           st);
  if (r->step_st != DC_OK)
    return r->step_st;
  double t2 = now();
  optimizer_step(&r->opt_state, &r->model, &r->grad);
  r->t_compute += (t1 - t0 - r->t_ready) + (now() - t2);
  r->t_comm += (t2 - t1) + r->t_ready;
  return DC_OK;
}

/* ---- --elastic: shrink to the survivors and go on ------------------------
 */

/* Replaces the group by the survivors' (dc_group_shrink, retried when a
 * survivor is lost during it). A rank that cannot go on ends here. */
static void shrink_group(run *r) {
  dc_group *s = NULL;
  dc_status st;
  for (int tries = 1; (st = dc_group_shrink(r->g, &s)) != DC_OK; tries++)
    if ((st != DC_ERR_PEER_LOST && st != DC_ERR_TIMEOUT) || tries >= r->size) {
      fprintf(stderr, "train: rank %d: dc_group_shrink failed: %s (%s)\n",
              r->rank, dc_strerror(st), dc_last_error());
      exit(1);
    }
  dc_group_free(r->g);
  r->g = s;
  r->rank = dc_group_rank(s);
  r->size = dc_group_size(s);
}

/* The world ranks that were members and are not in left (the survivors,
 * in the same order), then who goes on. */
static void say_lost(const run *r, const int *left, long long done) {
  printf("elastic: lost world rank");
  for (int j = 0, k = 0; j < r->nmembers; j++) {
    if (k < r->size && left[k] == r->members[j])
      k++;
    else
      printf(" %d", r->members[j]);
  }
  printf("; %d rank%s go%s on from step %lld:", r->size,
         r->size == 1 ? "" : "s", r->size == 1 ? "es" : "", done + 1);
  for (int k = 0; k < r->size; k++)
    printf(" %d", left[k]);
  printf(" (world ranks) share each batch of %d\n", r->opt.batch);
  fflush(stdout);
}

/* Every survivor takes the new rank 0's weights, optimizer state and count
 * of steps done (*done: this rank's in, rank 0's out), and learns who is
 * left. Rank 0 says which ranks went. */
static dc_status sync_state(run *r, long long *done) {
  int *left = malloc((size_t)r->size * sizeof *left);
  if (!left) {
    fprintf(stderr, "train: rank %d: out of memory\n", r->rank);
    exit(1);
  }
  long long head[2] = {*done, r->opt_state.t};
  size_t np = r->model.nparams;
  dc_status st = dc_all_gather(r->g, &r->world_rank, left, 1, DC_INT32);
  if (st == DC_OK)
    st = dc_broadcast(r->g, head, 2, DC_INT64, 0);
  if (st == DC_OK)
    st = dc_broadcast(r->g, r->model.params, np, DC_FLOAT32, 0);
  if (st == DC_OK && r->opt.adam)
    st = dc_broadcast(r->g, r->opt_state.m, np, DC_FLOAT32, 0);
  if (st == DC_OK && r->opt.adam)
    st = dc_broadcast(r->g, r->opt_state.v, np, DC_FLOAT32, 0);
  if (st != DC_OK) {
    free(left);
    return failed(r, "sharing the state", st);
  }
  if (r->rank == 0)
    say_lost(r, left, head[0]);
  *done = head[0];
  r->opt_state.t = head[1];
  free(r->members);
  r->members = left;
  r->nmembers = r->size;
  return DC_OK;
}

/* --elastic: an op failed on this rank (a peer lost). Shrinks to the
 * survivors and takes the new rank 0's state; another loss meanwhile
 * shrinks again. Returns the steps done from which training goes on (each
 * batch then cut among the survivors: share_first). started: when the
 * failed step began (on the victim: its kill, at the same step's start). */
static long long recover(run *r, long long done, double started) {
  fprintf(stderr,
          "train: rank %d: %s failed after %lld steps: %s (%s); shrinking "
          "the group\n",
          r->rank, r->failed_op, done, dc_strerror(r->step_st),
          dc_group_last_error(r->g));
  r->t_lost = started;
  int tries = r->size;
  do {
    if (tries-- == 0) {
      fprintf(stderr, "train: rank %d: still losing ranks; giving up\n",
              r->rank);
      exit(1);
    }
    shrink_group(r);
    r->t_shrunk = now();
    r->step_st = DC_OK;
  } while (sync_state(r, &done) != DC_OK);
  r->t_synced = now();
  sampler_seek(&r->batches, done, r->opt.batch);
  workspace_free(&r->ws);
  if (workspace_init(&r->ws, &r->model, share_first(r, 1) + 1)) {
    fprintf(stderr, "train: rank %d: out of memory\n", r->rank);
    exit(1);
  }
  r->redone = (int)done + 1;
  return done;
}

/* After the first step done since a recovery: how long it took. */
static void say_recovered(run *r, int s) {
  if (r->rank == 0)
    printf("elastic: step %d done on %d rank%s %.3f s after the failed step "
           "began (shrink %.3f s, state %.3f s)\n",
           s, r->size, r->size == 1 ? "" : "s", now() - r->t_lost,
           r->t_shrunk - r->t_lost, r->t_synced - r->t_shrunk);
  fflush(stdout);
  r->redone = 0;
}

/* --die-at: the victim goes as a crash would, without a word to the peers. */
static void die_now(const run *r, int s) {
  fflush(stdout);
  fprintf(stderr, "train: rank %d: --die-at %d: killing myself (SIGKILL)\n",
          r->rank, s);
  raise(SIGKILL);
}

/* Held-out accuracy: each rank scores its own slice of the test set and one
 * all_sum adds up the counts. */
static dc_status accuracy(run *r, double *pct) {
  int n = r->test.n;
  int first = (int)((long long)n * r->rank / r->size);
  int last = (int)((long long)n * (r->rank + 1) / r->size);
  long long correct =
      mlp_count_correct(&r->model, &r->test, first, last - first, &r->ws);
  dc_status st = dc_all_sum(r->g, &correct, &correct, 1, DC_INT64);
  if (st != DC_OK)
    return failed(r, "all_sum of the accuracy", st);
  *pct = 100.0 * (double)correct / n;
  return DC_OK;
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

/* 0: identical; 1: they differ; a status < 0 when the exchange failed. */
static int check_weights(run *r) {
  uint64_t mine = checksum(&r->model), hi = mine, lo = mine;
  dc_status st = dc_all_max(r->g, &hi, &hi, 1, DC_UINT64);
  if (st == DC_OK)
    st = dc_all_min(r->g, &lo, &lo, 1, DC_UINT64);
  if (st != DC_OK)
    return failed(r, "checksum exchange", st);
  if (hi != lo) {
    fprintf(stderr,
            "train: rank %d: WEIGHTS DIFFER BETWEEN RANKS: mine "
            "0x%016" PRIx64 ", min 0x%016" PRIx64 ", max 0x%016" PRIx64 "\n",
            r->rank, mine, lo, hi);
    return 1;
  }
  if (r->rank == 0)
    printf("weights identical on all %d rank%s (checksum 0x%016" PRIx64 ")\n",
           r->size, r->size == 1 ? "" : "s", mine);
  return 0;
}

/* Step *s; 0 when it failed and --elastic recovered: *s is then the
 * survivors' count of steps done, from which the loop goes on. */
static int step_or_recover(run *r, int *s) {
  if (*s == r->opt.die_at && r->world_rank == r->opt.die_rank)
    die_now(r, *s);
  double t0 = now();
  unsigned long long c0 = dc_group_collectives(r->g);
  if (step(r) != DC_OK) {
    *s = (int)recover(r, *s - 1, t0);
    return 0;
  }
  if (!r->said_header) {
    r->sums_per_step = dc_group_collectives(r->g) - c0;
    r->said_header = 1;
    if (r->rank == 0)
      print_header(r);
  }
  if (r->redone)
    say_recovered(r, *s);
  return 1;
}

static void train(run *r) {
  double start = now();
  for (int s = 1; s <= r->opt.steps; s++) {
    if (!step_or_recover(r, &s))
      continue;
    if (r->rank == 0 &&
        (s == 1 || s % r->opt.log_every == 0 || s == r->opt.steps)) {
      printf("step %4d  loss %.6f\n", s, r->loss);
      fflush(stdout);
    }
  }
  double elapsed = now() - start;
  double acc;
  while (accuracy(r, &acc) != DC_OK)
    recover(r, r->opt.steps, now());
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
  r.rank = r.world_rank = dc_group_rank(r.g);
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
  while ((rc = check_weights(&r)) < 0)
    recover(&r, r.opt.steps, now());
  teardown(&r);
  dc_group_free(r.g);
  return rc ? 1 : 0;
}
