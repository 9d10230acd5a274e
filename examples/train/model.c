/* A small multi-layer perceptron (ReLU hidden layers, softmax cross-entropy)
 * with its backward pass written out by hand, plus SGD and Adam. Plain loops:
 * the example is about the communication, and the model is small enough
 * that a BLAS would not change the picture. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

int mlp_init(mlp *m, int in, int hidden, int out, int layers) {
  int dims[MLP_MAX_LAYERS + 1];
  if (layers < 2 || layers > MLP_MAX_LAYERS)
    return -1;
  m->layers = layers;
  dims[0] = in;
  for (int k = 1; k < layers; k++)
    dims[k] = hidden;
  dims[layers] = out;
  size_t total = 0;
  for (int k = 0; k < m->layers; k++)
    total += (size_t)dims[k + 1] * dims[k] + (size_t)dims[k + 1];
  m->params = calloc(total, sizeof *m->params);
  if (!m->params)
    return -1;
  m->nparams = total;
  float *p = m->params;
  for (int k = 0; k < m->layers; k++) {
    layer *l = &m->l[k];
    l->in = dims[k];
    l->out = dims[k + 1];
    l->w = p;
    p += (size_t)l->out * l->in;
    l->b = p;
    p += l->out;
  }
  return 0;
}

void mlp_free(mlp *m) {
  free(m->params);
  m->params = NULL;
}

void mlp_randomize(mlp *m, uint64_t seed) {
  rng r = rng_seeded(seed, 2);
  for (int k = 0; k < m->layers; k++) {
    layer *l = &m->l[k];
    /* He initialisation keeps ReLU activations at a stable scale. */
    double bound = sqrt(6.0 / l->in);
    for (size_t i = 0; i < (size_t)l->out * l->in; i++)
      l->w[i] = (float)((2.0 * rng_uniform(&r) - 1.0) * bound);
    memset(l->b, 0, (size_t)l->out * sizeof *l->b);
  }
}

int workspace_init(workspace *ws, const mlp *m, int batch) {
  int width = m->l[0].in;
  for (int k = 0; k < m->layers; k++)
    if (m->l[k].out > width)
      width = m->l[k].out;
  ws->batch = batch;
  ws->width = width;
  size_t size = (size_t)batch * width * sizeof(float);
  int ok = 1;
  for (int k = 0; k <= m->layers; k++)
    ok &= (ws->act[k] = malloc(size)) != NULL;
  for (int k = 0; k < 2; k++)
    ok &= (ws->delta[k] = malloc(size)) != NULL;
  return ok ? 0 : -1;
}

void workspace_free(workspace *ws) {
  for (int k = 0; k <= MLP_MAX_LAYERS; k++)
    free(ws->act[k]);
  for (int k = 0; k < 2; k++)
    free(ws->delta[k]);
}

/* w . x in 16 running sums added in a fixed order: the compiler
 * vectorises it (one running sum cannot be reordered without -ffast-math,
 * which made forward take twice as long as backward), and every rank
 * still computes the same bits. */
static float dot(const float *w, const float *x, int n) {
  enum { LANES = 16 };
  float part[LANES] = {0}, acc = 0;
  int i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++)
      part[k] += w[i + k] * x[i + k];
  for (; i < n; i++)
    acc += w[i] * x[i];
  for (int k = 0; k < LANES; k++)
    acc += part[k];
  return acc;
}

/* out[s][o] = b[o] + W[o] . in[s], then ReLU unless this is the last layer */
static void layer_forward(const layer *l, const float *in, float *out, int n,
                          int relu) {
  for (int s = 0; s < n; s++) {
    const float *x = in + (size_t)s * l->in;
    float *y = out + (size_t)s * l->out;
    for (int o = 0; o < l->out; o++) {
      float acc = l->b[o] + dot(l->w + (size_t)o * l->in, x, l->in);
      y[o] = relu && acc < 0 ? 0 : acc;
    }
  }
}

/* Gathers the samples idx[0..n) into act[0] and runs every layer. */
static void forward(const mlp *m, const dataset *d, const int *idx, int first,
                    int n, workspace *ws) {
  for (int s = 0; s < n; s++) {
    int p = idx ? idx[s] : first + s;
    ws->act[0][2 * s] = d->x[2 * p];
    ws->act[0][2 * s + 1] = d->x[2 * p + 1];
  }
  for (int k = 0; k < m->layers; k++)
    layer_forward(&m->l[k], ws->act[k], ws->act[k + 1], n, k < m->layers - 1);
}

/* Turns the logits into d(loss)/d(logits) in place and returns the summed
 * loss. Softmax minus one-hot, divided by n because the loss is a mean. */
static double softmax_xent(float *logits, const dataset *d, const int *idx,
                           int n, int classes) {
  double loss = 0;
  for (int s = 0; s < n; s++) {
    float *z = logits + (size_t)s * classes;
    float top = z[0];
    for (int c = 1; c < classes; c++)
      top = z[c] > top ? z[c] : top;
    double sum = 0;
    for (int c = 0; c < classes; c++)
      sum += exp((double)(z[c] - top)); /* shifted: no overflow */
    int y = d->y[idx[s]];
    loss += log(sum) - (double)(z[y] - top);
    for (int c = 0; c < classes; c++) {
      double p = exp((double)(z[c] - top)) / sum;
      z[c] = (float)((p - (c == y)) / n);
    }
  }
  return loss;
}

/* Given dL/d(out) of layer l, accumulate dL/dW and dL/db into g and, when
 * din is not NULL, write dL/d(in) masked by the ReLU of the input. */
static void layer_backward(const layer *l, const float *in, const float *dout,
                           layer *g, float *din, int n) {
  memset(g->w, 0, (size_t)l->out * l->in * sizeof *g->w);
  memset(g->b, 0, (size_t)l->out * sizeof *g->b);
  for (int s = 0; s < n; s++) {
    const float *x = in + (size_t)s * l->in;
    const float *e = dout + (size_t)s * l->out;
    for (int o = 0; o < l->out; o++) {
      float *gw = g->w + (size_t)o * l->in;
      for (int i = 0; i < l->in; i++)
        gw[i] += e[o] * x[i];
      g->b[o] += e[o];
    }
    if (!din)
      continue;
    float *dx = din + (size_t)s * l->in;
    memset(dx, 0, (size_t)l->in * sizeof *dx);
    for (int o = 0; o < l->out; o++) {
      const float *w = l->w + (size_t)o * l->in;
      for (int i = 0; i < l->in; i++)
        dx[i] += e[o] * w[i];
    }
    for (int i = 0; i < l->in; i++)
      if (x[i] <= 0) /* ReLU passes no gradient where it was off */
        dx[i] = 0;
  }
}

float mlp_loss_grad(const mlp *m, const dataset *d, const int *idx, int n,
                    mlp *grad, workspace *ws, void (*done)(void *, int),
                    void *arg) {
  forward(m, d, idx, 0, n, ws);
  float *dout = ws->act[m->layers];
  double loss = softmax_xent(dout, d, idx, n, m->l[m->layers - 1].out);
  for (int k = m->layers - 1; k >= 0; k--) {
    float *din = k > 0 ? ws->delta[k % 2] : NULL;
    layer_backward(&m->l[k], ws->act[k], dout, &grad->l[k], din, n);
    if (done)
      done(arg, k);
    dout = din;
  }
  return (float)(loss / n);
}

long long mlp_count_correct(const mlp *m, const dataset *d, int first, int n,
                            workspace *ws) {
  long long correct = 0;
  int classes = m->l[m->layers - 1].out;
  for (int start = 0; start < n; start += ws->batch) {
    int k = n - start < ws->batch ? n - start : ws->batch;
    forward(m, d, NULL, first + start, k, ws);
    for (int s = 0; s < k; s++) {
      const float *z = ws->act[m->layers] + (size_t)s * classes;
      int best = 0;
      for (int c = 1; c < classes; c++)
        if (z[c] > z[best])
          best = c;
      correct += best == d->y[first + start + s];
    }
  }
  return correct;
}

int optimizer_init(optimizer *o, int adam, float lr, size_t nparams) {
  o->adam = adam;
  o->lr = lr;
  o->t = 0;
  o->m = adam ? calloc(nparams, sizeof *o->m) : NULL;
  o->v = adam ? calloc(nparams, sizeof *o->v) : NULL;
  return !adam || (o->m && o->v) ? 0 : -1;
}

void optimizer_step(optimizer *o, mlp *m, const mlp *grad) {
  float *p = m->params;
  const float *g = grad->params;
  if (!o->adam) {
    for (size_t i = 0; i < m->nparams; i++)
      p[i] -= o->lr * g[i];
    return;
  }
  const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  o->t++;
  /* bias correction folded into the step size */
  float c1 = 1.0f - powf(b1, (float)o->t), c2 = 1.0f - powf(b2, (float)o->t);
  float step = o->lr * sqrtf(c2) / c1;
  for (size_t i = 0; i < m->nparams; i++) {
    o->m[i] = b1 * o->m[i] + (1 - b1) * g[i];
    o->v[i] = b2 * o->v[i] + (1 - b2) * g[i] * g[i];
    p[i] -= step * o->m[i] / (sqrtf(o->v[i]) + eps);
  }
}

void optimizer_free(optimizer *o) {
  free(o->m);
  free(o->v);
}
