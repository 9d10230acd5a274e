/* The overlapped dc_average_gradients (start / ready / wait) across real
 * processes. "check" (through the launcher, 2 and 4 ranks): the results are
 * bit-identical to the blocking form's, with inexact float sums, mixed
 * dtypes, empty tensors, several bucket sizes and every marking order
 * (last first, first first, shuffled, some never marked), make the same
 * number of all_sums, and every rank holds the same bits; bad marks fail
 * with DC_ERR_INVALID and leave the call usable. Ends with "rank R: P
 * passed, F failed". "kill" (started by hand, overlap_kill.sh): the last
 * rank SIGKILLs itself after marking half its tensors; the others' wait
 * fails and prints "rank R: ERR <STATUS>: <detail>", exit 4. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distcomm.h"

static int passed, failed, rank, size;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "rank %d: %s:%d: FAILED %s: ", rank, __FILE__, __LINE__, \
              #cond);                                                          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

enum { NT = 23 };

/* A list like a small model's: float32 layers of odd sizes with float64,
 * float16, int32 and empty tensors among them. */
static const size_t counts[NT] = {1,   777, 4099,  0,   33, 1024, 5,  70000,
                                  129, 2,   999,   513, 0,  64,   17, 3000,
                                  1,   256, 12345, 8,   40, 7,    600};

static dc_dtype dtype_of(int i) {
  return i % 7 == 3    ? DC_FLOAT64
         : i % 7 == 5  ? DC_FLOAT16
         : i % 11 == 9 ? DC_INT32
                       : DC_FLOAT32;
}

/* Rank-dependent, inexact values: sums round, so the bits depend on the
 * order of the additions. */
static void fill(unsigned char **buf, dc_tensor *t) {
  for (int i = 0; i < NT; i++) {
    dc_dtype d = dtype_of(i);
    size_t c = counts[i];
    for (size_t j = 0; j < c; j++) {
      double x = sin(0.37 * (double)j + i) * (1.0 + rank * 0.3131) / 3.0;
      switch (d) {
      case DC_FLOAT64:
        ((double *)buf[i])[j] = x;
        break;
      case DC_FLOAT16:
        ((uint16_t *)buf[i])[j] =
            (uint16_t)(0x3000 + (j * 7 + rank * 13 + i) % 0x0c00);
        break;
      case DC_INT32:
        ((int32_t *)buf[i])[j] = (int32_t)(x * 1e6) - rank;
        break;
      default:
        ((float *)buf[i])[j] = (float)x;
        break;
      }
    }
    t[i] = (dc_tensor){c ? buf[i] : NULL, c, d};
  }
}

static size_t bytes_of(int i) { return counts[i] * dc_dtype_size(dtype_of(i)); }

/* Mark the tensors in `order` (NULL entries stop early: the rest are left
 * for wait), then wait. */
static dc_status overlapped(dc_group *g, dc_tensor *t, long long bucket,
                            const int *order, int marks) {
  dc_grad_average *av = NULL;
  dc_status st = dc_average_gradients_start(g, t, NT, bucket, &av);
  if (st != DC_OK)
    return st;
  for (int k = 0; k < marks && st == DC_OK; k++)
    st = dc_average_gradients_ready(av, (size_t)order[k]);
  dc_status w = dc_average_gradients_wait(av);
  return st != DC_OK ? st : w;
}

static void check_one(dc_group *g, unsigned char **a, unsigned char **b,
                      long long bucket, const int *order, int marks,
                      const char *what) {
  dc_tensor ta[NT], tb[NT];
  fill(a, ta);
  fill(b, tb);
  unsigned long long c0 = dc_group_collectives(g);
  dc_status st = dc_average_gradients(g, ta, NT, bucket);
  CHECK(st == DC_OK, "blocking: %s", dc_group_last_error(g));
  unsigned long long c1 = dc_group_collectives(g);
  st = overlapped(g, tb, bucket, order, marks);
  CHECK(st == DC_OK, "%s, bucket %lld: %s (%s)", what, bucket,
        dc_status_name(st), dc_group_last_error(g));
  unsigned long long c2 = dc_group_collectives(g);
  CHECK(c2 - c1 == c1 - c0, "%s, bucket %lld: %llu all_sums, blocking %llu",
        what, bucket, c2 - c1, c1 - c0);
  int same = 1;
  for (int i = 0; i < NT; i++)
    same &= memcmp(a[i], b[i], bytes_of(i)) == 0;
  CHECK(same, "%s, bucket %lld: not bit-identical to the blocking form", what,
        bucket);
  /* every rank holds rank 0's bits */
  for (int i = 0; i < NT; i++) {
    if (!counts[i])
      continue;
    memcpy(a[i], b[i], bytes_of(i));
    st = dc_broadcast(g, a[i], bytes_of(i), DC_UINT8, 0);
    CHECK(st == DC_OK && memcmp(a[i], b[i], bytes_of(i)) == 0,
          "%s: tensor %d differs from rank 0's", what, i);
  }
}

static void test_identical(dc_group *g) {
  unsigned char *a[NT], *b[NT];
  for (int i = 0; i < NT; i++) {
    a[i] = malloc(bytes_of(i) + 1);
    b[i] = malloc(bytes_of(i) + 1);
  }
  int last[NT], first[NT], mixed[NT];
  for (int i = 0; i < NT; i++) {
    last[i] = NT - 1 - i;
    first[i] = i;
    mixed[i] = (i * 7) % NT; /* 7 and 23 are coprime: a permutation */
  }
  long long buckets[] = {DC_ALL_REDUCE_SIZE_DEFAULT, 4096, 20000, 0};
  for (int k = 0; k < 4; k++) {
    check_one(g, a, b, buckets[k], last, NT, "last first");
    check_one(g, a, b, buckets[k], first, NT, "first first");
    check_one(g, a, b, buckets[k], mixed, NT, "shuffled");
    check_one(g, a, b, buckets[k], last, NT / 2, "half marked");
  }
  for (int i = 0; i < NT; i++) {
    free(a[i]);
    free(b[i]);
  }
}

static void test_bad_marks(dc_group *g) {
  float x[4] = {1, 2, 3, (float)rank};
  dc_tensor t[2] = {{x, 2, DC_FLOAT32}, {x + 2, 2, DC_FLOAT32}};
  dc_grad_average *av = NULL;
  dc_status st = dc_average_gradients_start(g, t, 2, 0, &av);
  CHECK(st == DC_OK && av, "start: %s", dc_group_last_error(g));
  CHECK(dc_average_gradients_ready(av, 2) == DC_ERR_INVALID,
        "index 2 of 2 accepted");
  CHECK(strstr(dc_last_error(), "out of range"), "%s", dc_last_error());
  CHECK(dc_average_gradients_ready(av, 1) == DC_OK, "%s", dc_last_error());
  CHECK(dc_average_gradients_ready(av, 1) == DC_ERR_INVALID,
        "tensor 1 marked twice");
  CHECK(strstr(dc_last_error(), "already"), "%s", dc_last_error());
  st = dc_average_gradients_wait(av);
  CHECK(st == DC_OK, "wait: %s", dc_group_last_error(g));
  CHECK(x[0] == 1 && x[2] == 3 && x[3] == (float)((size - 1) / 2.0),
        "values %g %g %g", x[0], x[2], x[3]);
  CHECK(dc_average_gradients_ready(NULL, 0) == DC_ERR_INVALID, "NULL avg");
  CHECK(dc_average_gradients_wait(NULL) == DC_ERR_INVALID, "NULL avg");
  CHECK(dc_average_gradients_start(g, t, 2, 0, NULL) == DC_ERR_INVALID,
        "NULL out accepted");
}

static int run_kill(dc_group *g) {
  static float v[8][100000];
  dc_tensor t[8];
  for (int i = 0; i < 8; i++)
    t[i] = (dc_tensor){v[i], 100000, DC_FLOAT32};
  dc_grad_average *av = NULL;
  dc_status st = dc_average_gradients_start(g, t, 8, 400000, &av);
  for (int i = 7; i >= 4 && st == DC_OK; i--)
    st = dc_average_gradients_ready(av, (size_t)i);
  if (rank == size - 1) {
    printf("rank %d: dying\n", rank);
    fflush(stdout);
    raise(SIGKILL);
  }
  dc_status w = dc_average_gradients_wait(av);
  st = st != DC_OK ? st : w;
  if (st == DC_OK) {
    printf("rank %d: wait succeeded with rank %d dead\n", rank, size - 1);
    return 1;
  }
  printf("rank %d: ERR %s: %s\n", rank, dc_status_name(st),
         dc_group_last_error(g));
  return 4;
}

int main(int argc, char **argv) {
  dc_group *g = NULL;
  dc_status st = dc_init("any", 0, &g);
  if (st != DC_OK) {
    fprintf(stderr, "dc_init: %s (%s)\n", dc_strerror(st), dc_last_error());
    return 1;
  }
  rank = dc_group_rank(g);
  size = dc_group_size(g);
  if (argc > 1 && strcmp(argv[1], "kill") == 0) {
    int rc = run_kill(g);
    dc_group_free(g);
    return rc;
  }
  test_identical(g);
  test_bad_marks(g);
  printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
  dc_group_free(g);
  return failed ? 1 : 0;
}
