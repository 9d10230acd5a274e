/* shrink_test VICTIM MODE DIR: dc_group_shrink after a lost rank (issue
 * 37). Every rank runs all_sums of (rank + 1); rank VICTIM kills itself
 * with SIGKILL between two ops (MODE between) or in the middle of one
 * (during, from a timer) or stops itself (stop: silent, alive; found by
 * the timeouts) or dies after three good ops, as the others call
 * dc_group_shrink on the healthy group (before), or dies between ops and
 * rank VICTIM + 1 dies too, in the shrink, as the survivors' group connects
 * (connect: addresses swapped, not connected; confirm: connected, not
 * confirmed yet: a test hook of the library; inshrink: from a timer
 * MP_SHRINK_DELAY_US after it enters the shrink, or right after its shrink
 * returns), or dies between ops of a split group (split: all ranks, in
 * reverse order; VICTIM is its rank there); with MODE none nobody dies and
 * the shrink is of a healthy group; with MODE refused, the calls that must be
 * refused with a clear error (NULL arguments; the singleton, or the MPI
 * backend under mpirun: tests/mpi). Every shrunk group must keep the
 * world's backend (mesh stays mesh) and a neighbours-only ring its kind.
 * Each survivor waits for its op to fail, shrinks, and checks the new group's
 * size, its rank (position among the survivors) and all_sums over it; it prints
 * the time from the kill (written by the victim to DIR/kill) to its first
 * all_sum in the new group. Run through distcomm-launch --keep-going
 * (tests/mp/shrink.sh). MP_SHRINK_AT: the op before which the victim dies
 * or stops (default 3); MP_SHRINK_DURING_US: during's timer (300000). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "mp_util.h"

#define COUNT 65536 /* floats: large enough for the pipes' chunks */

static int rank;
static long pass, fails;
static const char *die_at; /* the second victim's point */
static const char *kind;   /* the world's backend, which a shrink keeps */

/* The library's test hook (src/backends/native/native.h). */
extern void (*dc_shrink_test_hook)(const char *point);

static void second_victim(const char *point) {
  if (strcmp(point, die_at) == 0) {
    printf("rank %d: dying at the shrink's %s point\n", rank, point);
    fflush(stdout);
    raise(SIGKILL);
  }
}

static void check(int ok, const char *what, const char *detail) {
  if (ok) {
    pass++;
    return;
  }
  fails++;
  printf("rank %d: FAIL %s%s%s\n", rank, what, detail ? ": " : "",
         detail ? detail : "");
  fflush(stdout);
}

static void note_kill(const char *dir, double at) {
  char path[512];
  snprintf(path, sizeof path, "%s/kill", dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "%.6f\n", at);
    fclose(f);
  }
}

static double read_kill(const char *dir) {
  char path[512];
  double at = 0;
  snprintf(path, sizeof path, "%s/kill", dir);
  FILE *f = fopen(path, "r");
  if (f) {
    if (fscanf(f, "%lf", &at) != 1)
      at = 0;
    fclose(f);
  }
  return at;
}

static void die(int sig) {
  (void)sig;
  kill(getpid(), SIGKILL);
}

static long env_long(const char *name, long def) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : def;
}

/* A SIGKILL in us microseconds (SIGALRM). */
static void kill_in(long us) {
  struct itimerval t = {.it_value = {.tv_sec = us / 1000000,
                                     .tv_usec = us % 1000000 + (us == 0)}};
  signal(SIGALRM, die);
  setitimer(ITIMER_REAL, &t, NULL);
}

/* The victim in MODE during: killed by a timer 0.3 s (MP_SHRINK_DURING_US)
 * into its all_sums. */
static void arm(const char *dir) {
  long us = env_long("MP_SHRINK_DURING_US", 300000);
  note_kill(dir, mp_wall() + (double)us / 1e6);
  kill_in(us);
}

static int sum_ok(const float *v, double want) {
  for (size_t i = 0; i < COUNT; i++)
    if (v[i] != (float)want)
      return 0;
  return 1;
}

/* all_sums until one fails (the loss), or ops_max of them succeed. */
static void until_loss(dc_group *g, int n, int victim, const char *mode,
                       const char *dir, float *in, float *out) {
  int healthy = strcmp(mode, "none") == 0 || strcmp(mode, "before") == 0;
  int ops_max = healthy ? 3 : 100000;
  double until = mp_mono() + 60;
  int at = (int)env_long("MP_SHRINK_AT", 3);
  if (rank == victim && strcmp(mode, "during") == 0)
    arm(dir);
  for (int i = 0; i < ops_max && mp_mono() < until; i++) {
    if (rank == victim && i == at &&
        (strcmp(mode, "between") == 0 || strcmp(mode, "connect") == 0 ||
         strcmp(mode, "confirm") == 0 || strcmp(mode, "inshrink") == 0 ||
         strcmp(mode, "split") == 0)) {
      note_kill(dir, mp_wall());
      raise(SIGKILL);
    }
    if (rank == victim && strcmp(mode, "stop") == 0 && i == at) {
      char path[512];
      snprintf(path, sizeof path, "%s/victim_pid", dir);
      FILE *f = fopen(path, "w");
      if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
      }
      note_kill(dir, mp_wall()); /* silent from now: found by timeouts */
      raise(SIGSTOP);
      return; /* woken (SIGCONT): the others left it out */
    }
    if (dc_all_sum(g, in, out, COUNT, DC_FLOAT32) != DC_OK) {
      printf("rank %d: op %d failed: %s\n", rank, i, dc_group_last_error(g));
      return;
    }
    check(sum_ok(out, n * (n + 1) / 2.0), "all_sum before the loss", NULL);
  }
  check(healthy, "the loss was never seen", NULL);
  if (rank == victim && strcmp(mode, "before") == 0) {
    note_kill(dir, mp_wall()); /* the others shrink a healthy group */
    raise(SIGKILL);
  }
}

/* An all_sum on *s; with again (inshrink: the second victim may die
 * after the others confirmed their group), a failed one shrinks *s again,
 * at most twice. */
static dc_status sum_settled(dc_group **s, int again, float *in, float *out) {
  dc_status st = dc_all_sum(*s, in, out, COUNT, DC_FLOAT32);
  for (int k = 0; st != DC_OK && again && k < 2; k++) {
    dc_group *t = NULL;
    printf("rank %d: shrinking again after: %s\n", rank,
           dc_group_last_error(*s));
    st = dc_group_shrink(*s, &t);
    check(st == DC_OK, "shrink again", dc_last_error());
    if (st != DC_OK)
      return st;
    dc_group_free(*s);
    *s = t;
    st = dc_all_sum(*s, in, out, COUNT, DC_FLOAT32);
  }
  return st;
}

static void neighbours_only(dc_group *s, const float *in);
static int has(const char *s, const char *part);

/* lost: the victims (-1 for none). */
static void after(dc_group **sp, int n, const int lost[2], int again,
                  const char *dir, float *in, float *out) {
  int nlost = 0, below = 0;
  double want = n * (n + 1) / 2.0;
  for (int k = 0; k < 2; k++)
    if (lost[k] >= 0 && lost[k] < n) {
      nlost++;
      below += lost[k] < rank;
      want -= lost[k] + 1;
    }
  dc_status st0 = sum_settled(sp, again, in, out);
  dc_group *s = *sp;
  check(dc_group_size(s) == n - nlost, "new size", NULL);
  check(dc_group_rank(s) == rank - below, "new rank", NULL);
  for (int i = 0; i < 5; i++) {
    dc_status st = i == 0 ? st0 : dc_all_sum(s, in, out, COUNT, DC_FLOAT32);
    check(st == DC_OK, "all_sum after the shrink", dc_group_last_error(s));
    check(st != DC_OK || sum_ok(out, want), "sum after the shrink", NULL);
    double at = read_kill(dir);
    if (i == 0 && st == DC_OK && nlost && at > 0)
      printf("rank %d: kill to first all_sum of the shrunk group: %.3f s\n",
             rank, mp_wall() - at);
  }
  printf("rank %d: shrunk to %d ranks on the %s backend\n", rank,
         dc_group_size(s), dc_group_backend(s));
  check(strcmp(dc_group_backend(s), kind) == 0, "the shrunk group's backend",
        dc_group_backend(s));
  neighbours_only(s, in);
}

/* A shrunk neighbours-only ring (DISTCOMM_RING_NEIGHBOURS=1, jaccl-ring)
 * stays one: a send past the neighbours is refused (last: it poisons s). */
static void neighbours_only(dc_group *s, const float *in) {
  const char *a = getenv("DISTCOMM_RING_NEIGHBOURS"),
             *b = getenv("MLX_JACCL_RING");
  int size = dc_group_size(s), me = dc_group_rank(s);
  if (size < 4 || !((a && !strcmp(a, "1")) || (b && !strcmp(b, "1"))))
    return;
  check(dc_send(s, in, 1, DC_FLOAT32, (me + 2) % size) ==
                DC_ERR_NOT_SUPPORTED &&
            has(dc_group_last_error(s), "only ring neighbours"),
        "the shrunk ring connects neighbours only", dc_group_last_error(s));
}

static int has(const char *s, const char *part) {
  return s && strstr(s, part) != NULL;
}

/* Refused with the reason; the group refused is not poisoned. */
static void refused(dc_group *g, float *in, float *out) {
  dc_group *s = g;
  check(dc_group_shrink(NULL, &s) == DC_ERR_INVALID && !s &&
            has(dc_last_error(), "shrink: group is NULL"),
        "NULL group", dc_last_error());
  check(dc_group_shrink(g, NULL) == DC_ERR_INVALID &&
            has(dc_last_error(), "shrink: survivors is NULL"),
        "NULL survivors", dc_last_error());
  /* more ranks: under mpirun (tests/mpi) */
  const char *why = dc_group_size(g) == 1
                        ? "not supported on the singleton backend"
                        : "not supported on the mpi backend";
  check(dc_group_shrink(g, &s) == DC_ERR_NOT_SUPPORTED && !s &&
            has(dc_last_error(), why),
        "shrink refused with the reason", dc_last_error());
  check(dc_all_sum(g, in, out, COUNT, DC_FLOAT32) == DC_OK,
        "the refused group still works", dc_group_last_error(g));
}

/* Open file descriptors: the groups' sockets, kept listeners included,
 * must all be closed once both groups are freed. */
static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr,
            "usage: %s VICTIM "
            "between|during|stop|before|connect|confirm|inshrink|split|none|"
            "refused "
            "DIR\n",
            argv[0]);
    return 2;
  }
  int victim = atoi(argv[1]);
  const char *mode = argv[2], *dir = argv[3];
  int fds0 = open_fds();
  dc_group *g = mp_init_or_die("shrink_test");
  kind = dc_group_backend(g);
  rank = dc_group_rank(g);
  int n = dc_group_size(g);
  float *in = mp_alloc(COUNT * sizeof *in),
        *out = mp_alloc(COUNT * sizeof *out);
  for (size_t i = 0; i < COUNT; i++)
    in[i] = (float)(rank + 1);
  if (strcmp(mode, "refused") == 0) {
    refused(g, in, out);
    printf("rank %d: shrink: %ld passed, %ld failed\n", rank, pass, fails);
    printf("rank %d: %ld checks passed, %ld failed\n", rank, pass, fails);
    dc_group_free(g);
    free(in);
    free(out);
    return fails != 0;
  }
  dc_group *world = g;
  if (strcmp(mode, "split") == 0) { /* a split group, ranks reversed */
    check(dc_group_split(world, 0, n - rank, &g) == DC_OK, "split",
          dc_group_last_error(world));
    rank = dc_group_rank(g);
    for (size_t i = 0; i < COUNT; i++)
      in[i] = (float)(rank + 1);
  }
  int lost[2] = {strcmp(mode, "none") == 0 ? -1 : victim, -1};
  int inshrink = strcmp(mode, "inshrink") == 0;
  if (strcmp(mode, "connect") == 0 || strcmp(mode, "confirm") == 0 ||
      inshrink) {
    lost[1] = (victim + 1) % n;
    die_at = mode;
    if (rank == lost[1] && !inshrink)
      dc_shrink_test_hook = second_victim;
  }
  until_loss(g, n, victim, mode, dir, in, out);
  if (inshrink && rank == lost[1])
    kill_in(env_long("MP_SHRINK_DELAY_US", 20000));
  dc_group *s = NULL;
  dc_status st = dc_group_shrink(g, &s);
  if (inshrink && rank == lost[1])
    raise(SIGKILL); /* its timer did not fire during the shrink */
  check(st == DC_OK, "shrink", dc_last_error());
  if (st == DC_OK)
    after(&s, n, lost, inshrink, dir, in, out);
  check(dc_all_sum(g, in, out, COUNT, DC_FLOAT32) != DC_OK,
        "the old group is poisoned after the shrink", NULL);
  dc_group_free(s);
  if (g != world)
    dc_group_free(g);
  dc_group_free(world);
  check(open_fds() == fds0, "every socket closed after both groups are freed",
        NULL);
  free(in);
  free(out);
  printf("rank %d: shrink: %ld passed, %ld failed\n", rank, pass, fails);
  return fails != 0;
}
