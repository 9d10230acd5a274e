/* The embedded data set: points on interleaved spiral arms, one class per
 * arm. Generated, not loaded, so the example needs no download and every
 * rank builds exactly the same points from the seed. */
#include <math.h>
#include <stdlib.h>

#include "train.h"

rng rng_seeded(uint64_t seed, uint64_t stream) {
  /* Distinct streams (data, weights, batches) from one user seed. */
  rng r = {seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull};
  rng_next(&r);
  return r;
}

uint64_t rng_next(rng *r) {
  uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double rng_uniform(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

double rng_normal(rng *r) {
  /* Box-Muller; 1 - u keeps the logarithm finite. */
  double u = 1.0 - rng_uniform(r), v = rng_uniform(r);
  return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

static int dataset_alloc(dataset *d, int n, int classes) {
  d->x = malloc((size_t)n * 2 * sizeof *d->x);
  d->y = malloc((size_t)n * sizeof *d->y);
  d->n = n;
  d->classes = classes;
  return d->x && d->y ? 0 : -1;
}

void dataset_free(dataset *d) {
  free(d->x);
  free(d->y);
  d->x = NULL;
  d->y = NULL;
}

/* One point of arm k: the radius grows from the centre outwards while the
 * angle turns, with noise on the angle so that neighbouring arms overlap a
 * little and 100% accuracy is out of reach. */
static void spiral_point(rng *r, int classes, float *x, int *y) {
  int k = (int)(rng_next(r) % (uint64_t)classes);
  double t = rng_uniform(r);
  double angle = k * 2.0 * M_PI / classes + 6.0 * t + 0.3 * rng_normal(r);
  x[0] = (float)(t * sin(angle));
  x[1] = (float)(t * cos(angle));
  *y = k;
}

int spirals_make(uint64_t seed, int classes, int n_train, int n_test,
                 dataset *train, dataset *test) {
  if (dataset_alloc(train, n_train, classes) ||
      dataset_alloc(test, n_test, classes))
    return -1;
  rng r = rng_seeded(seed, 1);
  for (int i = 0; i < n_train; i++)
    spiral_point(&r, classes, &train->x[2 * i], &train->y[i]);
  for (int i = 0; i < n_test; i++)
    spiral_point(&r, classes, &test->x[2 * i], &test->y[i]);
  return 0;
}

static void shuffle(sampler *s) {
  rng r = rng_seeded(s->seed, 1000 + (uint64_t)s->epoch);
  for (int i = s->n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)(rng_next(&r) % (uint64_t)(i + 1));
    int t = s->perm[i];
    s->perm[i] = s->perm[j];
    s->perm[j] = t;
  }
  s->pos = 0;
}

int sampler_init(sampler *s, int n, uint64_t seed) {
  s->perm = malloc((size_t)n * sizeof *s->perm);
  if (!s->perm)
    return -1;
  for (int i = 0; i < n; i++)
    s->perm[i] = i;
  s->n = n;
  s->epoch = 0;
  s->seed = seed;
  shuffle(s);
  return 0;
}

void sampler_next(sampler *s, int batch, int *out) {
  if (s->pos + batch > s->n) { /* the epoch's last partial batch is dropped */
    s->epoch++;
    shuffle(s);
  }
  for (int i = 0; i < batch; i++)
    out[i] = s->perm[s->pos + i];
  s->pos += batch;
}

void sampler_seek(sampler *s, long long done, int batch) {
  /* sampler_next drops each epoch's partial batch, so an epoch holds
   * n / batch batches; the permutation of an epoch is that of the one
   * before, shuffled again, so it is rebuilt from the identity. */
  long long per_epoch = s->n / batch;
  int epoch = (int)(done / per_epoch);
  for (int i = 0; i < s->n; i++)
    s->perm[i] = i;
  for (s->epoch = 0; s->epoch <= epoch; s->epoch++)
    shuffle(s);
  s->epoch = epoch;
  s->pos = (int)(done % per_epoch) * batch;
}

void sampler_free(sampler *s) {
  free(s->perm);
  s->perm = NULL;
}
