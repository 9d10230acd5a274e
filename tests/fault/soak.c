/* soak: many collectives of mixed ops and sizes, every result checked, and
 * the process's memory and file descriptors flat from start to end.
 *
 *   soak [--steps N] [--seed S] [--no-rss]
 *
 * Every rank draws the same sequence from the seed: all_sum/max/min,
 * all_gather, sum_scatter, broadcast, send/recv between a drawn pair,
 * barrier; float32 or int32; mostly small counts (1..64), some up to 64 KiB,
 * a few up to 4 MiB. Inputs are small integers rebuilt from (rank, step,
 * index), so every rank knows every expected value exactly. At step
 * N / 20 (1000 for the default 20 000) and at the end it reads VmRSS and
 * counts /proc/self/fd: the counts must be equal and RSS may grow by less
 * than 8 MiB (--no-rss skips that: sanitizers keep freed memory aside).
 * Prints "rank R: soak N steps ok ..." and exits 0, or names the first
 * wrong step and exits 1. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

#define MAX_BYTES ((size_t)4 << 20)
#define RSS_SLACK_KIB (8 * 1024)

enum {
  ALL_SUM,
  ALL_MAX,
  ALL_MIN,
  ALL_GATHER,
  SUM_SCATTER,
  BROADCAST,
  SEND_RECV,
  BARRIER,
  KINDS
};
static const char *kind_name[KINDS] = {"all_sum",    "all_max",     "all_min",
                                       "all_gather", "sum_scatter", "broadcast",
                                       "send/recv",  "barrier"};

typedef struct step_plan {
  int kind, root, dst; /* root: broadcast root or send/recv source */
  dc_dtype dtype;
  size_t count; /* per rank; all_gather's recv holds size x count */
} step_plan;

typedef struct soak {
  dc_group *g;
  int rank, size;
  uint64_t seed;
  unsigned char *send, *recv;
  uint32_t h[64]; /* this step's input seed of each rank */
} soak;

/* Every rank draws the same plan for a step. */
static step_plan plan_of(const soak *s, uint64_t step) {
  uint64_t r = mp_mix(s->seed ^ (step * 0x9E3779B97F4A7C15ull));
  step_plan p = {.kind = (int)(r % KINDS)};
  p.dtype = (r >> 8) & 1 ? DC_INT32 : DC_FLOAT32;
  unsigned cls = (unsigned)((r >> 16) % 100);
  uint64_t x = r >> 24;
  size_t most = MAX_BYTES / 4; /* elements in 4 MiB */
  if (p.kind == ALL_GATHER || p.kind == SUM_SCATTER)
    most /= (size_t)s->size;
  size_t big = most > 16384 ? most - 16384 : 1;
  p.count = cls < 70 ? 1 + x % 64 : cls < 95 ? 65 + x % 16320 : 16385 + x % big;
  p.root = (int)((r >> 40) % (uint64_t)s->size);
  p.dst = (p.root + 1 + (int)((r >> 48) % (uint64_t)(s->size - 1))) % s->size;
  return p;
}

/* Rank q's input element i at this step: 0..255, exact in float32 sums. */
static uint32_t value(const soak *s, int q, size_t i) {
  return (s->h[q] + (uint32_t)i * 2654435761u) >> 24;
}

static void put(void *buf, dc_dtype t, size_t i, uint32_t v) {
  if (t == DC_INT32)
    ((int32_t *)buf)[i] = (int32_t)v;
  else
    ((float *)buf)[i] = (float)v;
}

static double get(const void *buf, dc_dtype t, size_t i) {
  return t == DC_INT32 ? (double)((const int32_t *)buf)[i]
                       : (double)((const float *)buf)[i];
}

/* What element i of this rank's result must be. */
static double expected(const soak *s, const step_plan *p, size_t i) {
  size_t base = p->kind == SUM_SCATTER ? (size_t)s->rank * p->count : 0;
  if (p->kind == ALL_GATHER)
    return value(s, (int)(i / p->count), i % p->count);
  if (p->kind == BROADCAST || p->kind == SEND_RECV)
    return value(s, p->root, i);
  double acc = value(s, 0, base + i);
  for (int q = 1; q < s->size; q++) {
    double v = value(s, q, base + i);
    acc = p->kind == ALL_MAX   ? (v > acc ? v : acc)
          : p->kind == ALL_MIN ? (v < acc ? v : acc)
                               : acc + v;
  }
  return acc;
}

/* Run one step; *n gets the number of result elements to check. */
static dc_status issue(soak *s, const step_plan *p, size_t *n) {
  dc_group *g = s->g;
  *n = p->count;
  switch (p->kind) {
  case ALL_SUM:
  case ALL_MAX:
  case ALL_MIN:
    return dc_all_reduce(g, s->send, s->recv, p->count, p->dtype,
                         p->kind == ALL_SUM   ? DC_SUM
                         : p->kind == ALL_MAX ? DC_MAX
                                              : DC_MIN);
  case ALL_GATHER:
    *n = p->count * (size_t)s->size;
    return dc_all_gather(g, s->send, s->recv, p->count, p->dtype);
  case SUM_SCATTER:
    return dc_sum_scatter(g, s->send, s->recv, p->count, p->dtype);
  case BROADCAST:
    if (s->rank == p->root)
      memcpy(s->recv, s->send, p->count * 4);
    return dc_broadcast(g, s->recv, p->count, p->dtype, p->root);
  case SEND_RECV:
    *n = s->rank == p->dst ? p->count : 0;
    if (s->rank == p->root)
      return dc_send(g, s->send, p->count, p->dtype, p->dst);
    return s->rank == p->dst ? dc_recv(g, s->recv, p->count, p->dtype, p->root)
                             : DC_OK;
  default:
    *n = 0;
    return dc_barrier(g);
  }
}

static int one_step(soak *s, uint64_t step) {
  step_plan p = plan_of(s, step);
  for (int q = 0; q < s->size; q++)
    s->h[q] = (uint32_t)mp_mix(s->seed + step * 64 + (uint64_t)q);
  size_t in = p.kind == SUM_SCATTER ? p.count * (size_t)s->size : p.count, n;
  for (size_t i = 0; i < in; i++)
    put(s->send, p.dtype, i, value(s, s->rank, i));
  dc_status st = issue(s, &p, &n);
  if (st != DC_OK) {
    printf("rank %d: step %llu %s of %zu %s: %s: %s\n", s->rank,
           (unsigned long long)step, kind_name[p.kind], p.count,
           dc_dtype_name(p.dtype), dc_status_name(st),
           dc_group_last_error(s->g));
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    double want = expected(s, &p, i), got = get(s->recv, p.dtype, i);
    if (got != want) {
      printf("rank %d: WRONG step %llu %s of %zu %s: element %zu is %g, want "
             "%g\n",
             s->rank, (unsigned long long)step, kind_name[p.kind], p.count,
             dc_dtype_name(p.dtype), i, got, want);
      return 1;
    }
  }
  return 0;
}

/* ---- memory and descriptors ---------------------------------------------- */

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  if (f)
    fclose(f);
  return kib;
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n - 1; /* the one opendir holds */
}

int main(int argc, char **argv) {
  uint64_t steps = 20000;
  soak s = {.seed = 1};
  int check_rss = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
      steps = mp_parse_size("STEPS", argv[++i]);
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
      s.seed = mp_parse_size("SEED", argv[++i]);
    else if (strcmp(argv[i], "--no-rss") == 0)
      check_rss = 0;
    else {
      fprintf(stderr, "usage: soak [--steps N] [--seed S] [--no-rss]\n");
      return 2;
    }
  }
  s.g = mp_init_or_die("soak");
  s.rank = dc_group_rank(s.g);
  s.size = dc_group_size(s.g);
  if (s.size < 2 || s.size > 64) {
    fprintf(stderr, "soak: needs 2 to 64 ranks\n");
    return 2;
  }
  s.send = mp_alloc(MAX_BYTES);
  s.recv = mp_alloc(MAX_BYTES);
  memset(s.send, 0, MAX_BYTES); /* every page counted in RSS from the start */
  memset(s.recv, 0, MAX_BYTES);
  uint64_t mark = steps / 20;
  long rss0 = 0;
  int fd0 = 0, bad = 0;
  double t0 = mp_mono();
  for (uint64_t step = 0; step < steps && !bad; step++) {
    if (step == mark) {
      rss0 = rss_kib();
      fd0 = open_fds();
    }
    bad = one_step(&s, step);
  }
  long rss1 = rss_kib();
  int fd1 = open_fds();
  if (!bad && (fd1 != fd0 || (check_rss && rss1 - rss0 >= RSS_SLACK_KIB))) {
    printf("rank %d: GROWTH from step %llu to the end: fds %d -> %d, VmRSS "
           "%ld -> %ld KiB\n",
           s.rank, (unsigned long long)mark, fd0, fd1, rss0, rss1);
    bad = 1;
  }
  if (!bad)
    printf("rank %d: soak %llu steps ok in %.1f s; fds %d -> %d, VmRSS %ld -> "
           "%ld KiB (from step %llu)\n",
           s.rank, (unsigned long long)steps, mp_mono() - t0, fd0, fd1, rss0,
           rss1, (unsigned long long)mark);
  dc_group_free(s.g);
  free(s.send);
  free(s.recv);
  return bad;
}
