/* copy_rate.c - the rates a two-rank collective on one host is built from,
 * measured the way it runs them: two processes at once, each copying its
 * own buffer (memcpy) and reading its sibling's (process_vm_readv in 64 KiB
 * pieces, as distcomm's single copy pulls). `bench/peers/compare shm` prints,
 * from these, the least time distcomm's single-copy algorithms can take per
 * cell.
 *
 *   bench-copy-rate [MIB] [REPS]      (default 128 MiB, 9 reps: the median)
 *       prints "copy rates, two processes at once (GB/s of bytes written):
 *       memcpy X, process_vm_readv Y"
 *   bench-copy-rate cross [KIB] [REPS]  (default 512 KiB, 201 reps)
 *       prints "K KiB through shared memory (write, then the sibling
 *       reads): both at once X GB/s each (T us), one at a time Y GB/s": a
 *       pipe's two copies between two ranks, writer's cache to reader's, at
 *       a size that stays in cache, without the pipe's bookkeeping. A
 *       two-rank all_gather of S bytes moves S/2 each way, an all_reduce
 *       twice that.
 *   bench-copy-rate line
 *       prints "cache line round trip N ns": two processes pass one line
 *       back and forth. On a VM this tells where the host put the two
 *       vCPUs: ~100-200 ns sharing a cache, ~450-600 ns on different dies
 *       (bench/peers/shm-tuning.md, session 15), which changes small transfers
 *       between ranks 2-3x and moves from one second to the next.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PIECE = 64 << 10, MAX_REPS = 64 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Both processes step together: each writes a byte and waits for the
 * other's, so their copies overlap as a collective's do. */
static void step(int out, int in) {
  char b = 0;
  if (write(out, &b, 1) != 1 || read(in, &b, 1) != 1)
    exit(1);
}

static int pull(pid_t from, char *dst, char *src, size_t bytes) {
  for (size_t o = 0; o < bytes; o += PIECE) {
    size_t n = bytes - o < PIECE ? bytes - o : PIECE;
    struct iovec l = {dst + o, n}, r = {src + o, n};
    if (process_vm_readv(from, &l, 1, &r, 1, 0) != (ssize_t)n)
      return -1;
  }
  return 0;
}

/* One side: REPS rounds of the two, each timed; the median of each. */
static int measure(pid_t sibling, char *src, char *dst, size_t bytes, int reps,
                   int out, int in, double rate[2]) {
  memset(src, 1, bytes); /* our own pages from here on, not shared ones */
  memset(dst, 2, bytes);
  double t[2][MAX_REPS];
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < 2; k++) {
      step(out, in);
      double t0 = now();
      if (k == 0)
        memcpy(dst, src, bytes);
      else if (pull(sibling, dst, src, bytes)) /* src: allocated before the
                                                  fork, same address there */
        return -1;
      t[k][r] = now() - t0;
    }
  }
  for (int k = 0; k < 2; k++) {
    qsort(t[k], (size_t)reps, sizeof t[k][0], cmp);
    rate[k] = (double)bytes / t[k][reps / 2] * 1e-9;
  }
  step(out, in); /* the sibling's buffer stays until both are done */
  return 0;
}

/* The median of 5 runs of 20000 round trips of one shared line. */
static int line_trip(void) {
  enum { TRIPS = 20000, RUNS = 5 };
  _Atomic long *f = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (f == MAP_FAILED)
    return 1;
  pid_t child = fork();
  if (child < 0)
    return 1;
  if (child == 0) { /* answers every odd value with the next one */
    for (long i = 1; i <= (long)TRIPS * RUNS; i++) {
      while (atomic_load(f) != 2 * i - 1)
        ;
      atomic_store(f, 2 * i);
    }
    _exit(0);
  }
  double t[RUNS], end = now() + 5; /* sharing one busy core, it crawls */
  for (long r = 0, i = 1; r < RUNS; r++) {
    double t0 = now();
    for (long k = 0; k < TRIPS; k++, i++) {
      atomic_store(f, 2 * i - 1);
      while (atomic_load(f) != 2 * i)
        ;
      if (k % 1024 == 0 && now() > end) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        printf("cache line round trip: none in 5 s (no second core free)\n");
        return 1;
      }
    }
    t[r] = (now() - t0) / TRIPS;
  }
  waitpid(child, NULL, 0);
  qsort(t, RUNS, sizeof t[0], cmp);
  printf("cache line round trip %.0f ns\n", t[RUNS / 2] * 1e9);
  return 0;
}

/* Both sides of "cross" meet here, spinning on a shared counter: a
 * blocking read would put the waiting vCPU to sleep, and waking it takes
 * longer than the copies measured. */
static void meet(_Atomic long *count, long *gen) {
  *gen += 2;
  atomic_fetch_add(count, 1);
  while (atomic_load(count) < *gen)
    ;
}

/* One side of "cross": each rep, copy into our buffer in the shared
 * mapping (lines the sibling read last time), meet, then copy out of the
 * sibling's (lines it has just written); both at once, or only the side
 * whose turn it is. The median time of each kind. */
static void cross_side(int me, char *shared, char *dst, size_t bytes, int reps,
                       double t[2]) {
  _Atomic long *count = (_Atomic long *)(void *)shared;
  char *own = shared + 4096 + (size_t)me * bytes,
       *theirs = shared + 4096 + (size_t)!me * bytes;
  static double m[3][MAX_REPS * 4];
  long gen = 0;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 3; k++) { /* both; side 0 alone; side 1 alone */
      int go = k == 0 || k - 1 == me;
      memset(dst, r + k, bytes);
      meet(count, &gen);
      double t0 = now();
      if (go)
        memcpy(own, dst, bytes);
      meet(count, &gen);
      if (go)
        memcpy(dst, theirs, bytes);
      m[k][r] = now() - t0;
    }
  meet(count, &gen);
  for (int k = 0; k < 3; k++)
    qsort(m[k], (size_t)reps, sizeof m[k][0], cmp);
  t[0] = m[0][reps / 2];
  t[1] = m[1 + me][reps / 2];
}

static int cross(int kib, int reps) {
  size_t bytes = (size_t)kib << 10;
  char *shared = mmap(NULL, 4096 + 2 * bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  char *dst = malloc(bytes);
  int b[2];
  if (shared == MAP_FAILED || !dst || pipe(b))
    return 1;
  pid_t child = fork();
  if (child < 0)
    return 1;
  double mine[2], theirs[2];
  if (child == 0) {
    cross_side(1, shared, dst, bytes, reps, theirs);
    _exit(write(b[1], theirs, sizeof theirs) == sizeof theirs ? 0 : 1);
  }
  cross_side(0, shared, dst, bytes, reps, mine);
  int ok = read(b[0], theirs, sizeof theirs) == sizeof theirs;
  waitpid(child, NULL, 0);
  if (!ok)
    return 1;
  double both = (mine[0] + theirs[0]) / 2, alone = (mine[1] + theirs[1]) / 2;
  printf("%d KiB through shared memory (write, then the sibling reads): both "
         "at once %.2f GB/s each (%.1f us), one at a time %.2f GB/s (%.1f "
         "us)\n",
         kib, (double)bytes / both * 1e-9, both * 1e6,
         (double)bytes / alone * 1e-9, alone * 1e6);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "line"))
    return line_trip();
  if (argc > 1 && !strcmp(argv[1], "cross")) {
    int kib = argc > 2 ? atoi(argv[2]) : 512;
    int reps = argc > 3 ? atoi(argv[3]) : 201;
    if (kib < 1 || reps < 1 || reps > MAX_REPS * 4) {
      fprintf(stderr, "usage: %s cross [KIB] [REPS<=%d]\n", argv[0],
              MAX_REPS * 4);
      return 2;
    }
    return cross(kib, reps);
  }
  size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 128) << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 9;
  if (bytes == 0 || reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "usage: %s [MIB] [REPS<=%d]\n", argv[0], MAX_REPS);
    return 2;
  }
  int a[2], b[2];
  char *src = malloc(bytes), *dst = malloc(bytes);
  if (!src || !dst || pipe(a) || pipe(b))
    return 1;
  pid_t parent = getpid(), child = fork();
  if (child < 0)
    return 1;
  double mine[2], theirs[2];
  if (child == 0) { /* reads the parent's buffers, reports through a pipe */
    int st = measure(parent, src, dst, bytes, reps, b[1], a[0], theirs);
    if (st == 0 && write(b[1], theirs, sizeof theirs) != sizeof theirs)
      st = -1;
    _exit(st ? 1 : 0);
  }
  int st = measure(child, src, dst, bytes, reps, a[1], b[0], mine);
  if (st == 0 && read(b[0], theirs, sizeof theirs) != sizeof theirs)
    st = -1;
  int ws = 0;
  waitpid(child, &ws, 0);
  if (st || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
    perror("copy_rate (process_vm_readv needs ptrace rights over the sibling)");
    return 1;
  }
  free(src);
  free(dst);
  printf("copy rates, two processes at once (GB/s of bytes written): memcpy "
         "%.2f, process_vm_readv %.2f\n",
         (mine[0] + theirs[0]) / 2, (mine[1] + theirs[1]) / 2);
  return 0;
}
