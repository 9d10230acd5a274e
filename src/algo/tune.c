/* Choosing between single copy and the pipes, by measuring (see tune.h). */
#include <stdlib.h>

#include "algo/tune.h"

dc_tune *dc_tune_new(int forced) {
  dc_tune *t = calloc(1, sizeof *t);
  if (t)
    t->mode = forced ? DC_TUNE_PULL : DC_TUNE_AUTO;
  return t;
}

static dc_tune_class *class_of(dc_tune *t, dc_tune_kind kind, size_t bytes) {
  int b = 0;
  while (b < 63 && (bytes >> (b + 1)) != 0)
    b++;
  return &t->cls[kind][b];
}

/* The best of the samples kept; 0 when there are none. */
static float best(const dc_tune_class *k, int pulled) {
  unsigned n = k->n[pulled] < DC_TUNE_SAMPLES ? k->n[pulled] : DC_TUNE_SAMPLES;
  float b = 0;
  for (unsigned i = 0; i < n; i++)
    if (b == 0 || k->seconds[pulled][i] < b)
      b = k->seconds[pulled][i];
  return b;
}

/* 1 when single copy's kept samples are the faster. */
static int pull_faster(const dc_tune_class *k) {
  float pull = best(k, 1), pipes = best(k, 0);
  if (pull == 0 || pipes == 0) /* the one with figures; pull if neither */
    return pipes == 0;
  return pull < pipes;
}

/* The exploration's path for a call: a burst of single copy, then one of
 * the pipes, and so on (the same on every rank). */
static int explore_pull(unsigned call) { return call / DC_TUNE_BURST % 2 == 0; }

int dc_tune_vote(dc_tune *t, dc_tune_kind kind, size_t bytes) {
  if (t->mode != DC_TUNE_AUTO)
    return t->mode == DC_TUNE_PULL;
  dc_tune_class *k = class_of(t, kind, bytes);
  unsigned call = k->calls++;
  if (call < DC_TUNE_EXPLORE)
    return explore_pull(call);
  unsigned in_burst = call % DC_TUNE_RETRY;
  if (in_burst > 0 && in_burst < DC_TUNE_BURST)
    return k->trying; /* the burst keeps its path whatever it measured */
  int faster = pull_faster(k);
  /* now and then the other path again: the machine may have changed */
  k->trying = !faster;
  return in_burst == 0 ? !faster : faster;
}

dc_tune_plan dc_tune_collective(dc_tune *t, dc_tune_kind kind, size_t bytes) {
  if (t->mode != DC_TUNE_AUTO)
    return t->mode == DC_TUNE_PULL ? DC_TUNE_GO_PULL : DC_TUNE_VOTE_PIPES;
  dc_tune_class *k = class_of(t, kind, bytes);
  unsigned call = k->calls++;
  if (call < DC_TUNE_EXPLORE)
    return explore_pull(call) ? DC_TUNE_GO_PULL : DC_TUNE_GO_PIPES;
  unsigned in_burst = call % DC_TUNE_RETRY;
  if (k->agreed == 0 || in_burst == DC_TUNE_BURST) /* 0: the first one */
    return pull_faster(k) ? DC_TUNE_VOTE_PULL : DC_TUNE_VOTE_PIPES;
  int pull = k->agreed == 2;
  if (in_burst < DC_TUNE_BURST) /* now and then the other path again */
    pull = !pull;
  return pull ? DC_TUNE_GO_PULL : DC_TUNE_GO_PIPES;
}

void dc_tune_agreed(dc_tune *t, dc_tune_kind kind, size_t bytes, int pulled) {
  class_of(t, kind, bytes)->agreed = pulled ? 2 : 1;
}

void dc_tune_record(dc_tune *t, dc_tune_kind kind, size_t bytes, int pulled,
                    double seconds) {
  dc_tune_class *k = class_of(t, kind, bytes);
  pulled = pulled != 0;
  k->seconds[pulled][k->n[pulled]++ % DC_TUNE_SAMPLES] = (float)seconds;
}
