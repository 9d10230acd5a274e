#define _POSIX_C_SOURCE 200809L
#include "mp_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t mp_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t mp_key(int rank, size_t index, int dtype, int tag) {
  uint64_t k = (uint64_t)index & ((1ull << 40) - 1);
  k ^= (uint64_t)(rank & 0xff) << 56;
  k ^= (uint64_t)(tag & 0xff) << 48;
  k ^= (uint64_t)(dtype & 0xff) << 40;
  return mp_mix(k);
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double mp_wall(void) { return clock_s(CLOCK_REALTIME); }
double mp_mono(void) { return clock_s(CLOCK_MONOTONIC); }

void *mp_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "test: cannot allocate %zu bytes\n", bytes);
    exit(2);
  }
  return p;
}

size_t mp_parse_size(const char *what, const char *text) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || !end || end == text || *end || text[0] == '-') {
    fprintf(stderr, "test: %s '%s' is not a non-negative integer\n", what,
            text);
    exit(2);
  }
  return (size_t)v;
}

dc_group *mp_init_or_die(const char *prog) {
  dc_group *g = NULL;
  dc_status st = dc_init("any", 0, &g);
  if (st != DC_OK) {
    fprintf(stderr, "%s: dc_init failed: %s: %s\n", prog, dc_status_name(st),
            dc_last_error());
    exit(2);
  }
  return g;
}
