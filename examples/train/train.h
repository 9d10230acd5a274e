/* Pieces of the data-parallel training example (see main.c). */
#ifndef TRAIN_H
#define TRAIN_H

#include <stddef.h>
#include <stdint.h>

/* ---- data.c: a seeded generator and the spiral data set ---------------- */

/* splitmix64: tiny, fast, and the same sequence on every rank and machine. */
typedef struct rng {
  uint64_t state;
} rng;

rng rng_seeded(uint64_t seed, uint64_t stream);
uint64_t rng_next(rng *r);
double rng_uniform(rng *r); /* [0, 1) */
double rng_normal(rng *r);  /* mean 0, variance 1 */

/* n points in 2-D, each labelled with one of `classes` spiral arms. */
typedef struct dataset {
  float *x; /* n x 2 */
  int *y;   /* n labels in [0, classes) */
  int n, classes;
} dataset;

/* The training and held-out sets, drawn from the seed (the same on every
 * rank). Returns 0, or -1 when out of memory. */
int spirals_make(uint64_t seed, int classes, int n_train, int n_test,
                 dataset *train, dataset *test);
void dataset_free(dataset *d);

/* Which training points make up each global batch: a fresh permutation of
 * the training set per epoch, drawn from the seed, cut into batches. */
typedef struct sampler {
  int *perm;
  int n, pos, epoch;
  uint64_t seed;
} sampler;

int sampler_init(sampler *s, int n, uint64_t seed);
/* The next global batch: out[0..batch) are indices into the training set. */
void sampler_next(sampler *s, int batch, int *out);
/* Back to where sampler_next has handed out `done` batches of `batch`
 * since sampler_init (elastic training resumes a step so). */
void sampler_seek(sampler *s, long long done, int batch);
void sampler_free(sampler *s);

/* ---- model.c: an MLP with softmax cross-entropy ------------------------- */

/* input -> hidden x (layers - 1) -> classes; the default is 2 hidden */
#define MLP_MAX_LAYERS 17

typedef struct layer {
  int in, out;
  float *w; /* out x in, row-major */
  float *b; /* out */
} layer;

/* The parameters live in one block (params, nparams) so the optimizer is a
 * single loop; the layers point into it. A gradient is an mlp too, with the
 * same layout. */
typedef struct mlp {
  layer l[MLP_MAX_LAYERS];
  int layers;
  float *params;
  size_t nparams;
} mlp;

/* layers weight layers (2 to MLP_MAX_LAYERS), layers - 1 hidden of width
 * hidden. */
int mlp_init(mlp *m, int in, int hidden, int out, int layers);
void mlp_free(mlp *m);
/* He-uniform weights from the seed, zero biases. */
void mlp_randomize(mlp *m, uint64_t seed);

/* Scratch space for a batch of up to `batch` samples. */
typedef struct workspace {
  float *act[MLP_MAX_LAYERS + 1]; /* act[0] = input, act[layers] = logits */
  float *delta[2];                /* back-propagated error, two buffers */
  int batch, width;
} workspace;

int workspace_init(workspace *ws, const mlp *m, int batch);
void workspace_free(workspace *ws);

/* Mean softmax cross-entropy over the samples idx[0..n) of d, and its
 * gradient (also a mean over the n samples) in grad. Backward runs from the
 * last layer to the first; done(arg, k), when not NULL, is called as soon
 * as layer k's gradient is final (DDP's backward hook). */
float mlp_loss_grad(const mlp *m, const dataset *d, const int *idx, int n,
                    mlp *grad, workspace *ws, void (*done)(void *, int),
                    void *arg);

/* How many of the points [first, first + n) of d the model classifies right. */
long long mlp_count_correct(const mlp *m, const dataset *d, int first, int n,
                            workspace *ws);

/* ---- optimizers (model.c) -------------------------------------------------
 */

typedef struct optimizer {
  int adam; /* 1: Adam, 0: plain SGD */
  float lr;
  float *m, *v; /* Adam's moment estimates */
  long long t;  /* Adam's step count, for bias correction */
} optimizer;

int optimizer_init(optimizer *o, int adam, float lr, size_t nparams);
void optimizer_step(optimizer *o, mlp *m, const mlp *grad);
void optimizer_free(optimizer *o);

#endif
