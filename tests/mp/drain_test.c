/* drain_test: two groups fail at once from two threads, each draining what
 * its peer still sends (audit item 12: the drain's scratch buffer was one
 * static shared by every group's thread; ThreadSanitizer flags the two
 * threads' reads into it). Run on 2 ranks over TCP (DISTCOMM_SHM=0), so
 * that the failed groups' sockets still carry the peer's payload.
 *
 * In each of two subgroups rank 1 sends BIG floats to rank 0, which
 * expects fewer: rank 0 sees the mismatch in the header, poisons its
 * group and drains the rest of the frame; both threads at once. Both
 * ranks must fail with an error naming the other, and the world group,
 * untouched, must still work. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

#define BIG ((size_t)4 << 20) /* floats: 16 MiB, more than socket buffers */

typedef struct worker {
  dc_group *g;
  int rank;
  dc_status st;
  char err[512];
} worker;

static pthread_barrier_t start;

static void *work(void *arg) {
  worker *w = arg;
  float *buf = mp_alloc(BIG * sizeof *buf);
  memset(buf, 0, BIG * sizeof *buf);
  pthread_barrier_wait(&start);
  if (w->rank == 1)
    w->st = dc_send(w->g, buf, BIG, DC_FLOAT32, 0);
  else
    w->st = dc_recv(w->g, buf, BIG / 2, DC_FLOAT32, 1);
  snprintf(w->err, sizeof w->err, "%s", dc_group_last_error(w->g));
  free(buf);
  return NULL;
}

int main(void) {
  dc_group *world = mp_init_or_die("drain_test");
  int rank = dc_group_rank(world), fail = 0, pass = 0;
  if (dc_group_size(world) != 2) {
    printf("drain_test: needs 2 ranks\n");
    return 1;
  }
  worker w[2] = {{.rank = rank}, {.rank = rank}};
  for (int i = 0; i < 2; i++)
    if (dc_group_split(world, 0, -1, &w[i].g) != DC_OK) {
      printf("rank %d: FAIL split %d: %s\n", rank, i,
             dc_group_last_error(world));
      return 1;
    }
  pthread_barrier_init(&start, NULL, 2);
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, work, &w[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  const char *peer = rank == 0 ? "rank 1" : "rank 0";
  for (int i = 0; i < 2; i++) {
    int ok = w[i].st != DC_OK && strstr(w[i].err, peer) &&
             (rank == 1 || w[i].st == DC_ERR_MISMATCH);
    ok ? pass++ : fail++;
    printf("rank %d: %s group %d: %s: %s\n", rank, ok ? "ok" : "FAIL", i,
           dc_status_name(w[i].st), w[i].err);
    dc_group_free(w[i].g);
  }
  float one = 1, sum = 0;
  dc_status st = dc_all_sum(world, &one, &sum, 1, DC_FLOAT32);
  st == DC_OK &&sum == 2 ? pass++ : fail++;
  printf("rank %d: world after the failed groups: %s sum %g\n", rank,
         dc_status_name(st), (double)sum);
  dc_group_free(world);
  printf("rank %d/2: drain: %d checks passed, %d failed\n", rank, pass, fail);
  return fail ? 1 : 0;
}
