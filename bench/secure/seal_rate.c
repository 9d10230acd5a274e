/* seal_rate [MIB] [REPEATS]: how fast one core seals and checks frames
 * (DISTCOMM_SECURE, src/transport/auth.c) against how fast it copies them,
 * for frames of 1 KiB to 4 MiB, MIB MiB of frames each (default 64), best
 * of REPEATS (default 5). One thread, no network: the CPU cost per byte
 * that an all_sum over TCP pays on each end (bench/secure/secure.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/auth.h"
#include "transport/frame.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  size_t total = mib << 20;
  dc_auth a;
  char err[256];
  if (dc_auth_from_token("seal-rate-bench-token-0123456789", &a, err,
                         sizeof err) != DC_OK) {
    fprintf(stderr, "seal_rate: %s\n", err);
    return 1;
  }
  dc_auth_bind b = {.job = 1, .group = 1, .connector = 1, .size = 2};
  dc_seal *tx = dc_seal_new(&a, &b, 1), *rx = dc_seal_new(&a, &b, 0);
  unsigned char *buf = malloc(total), *dst = malloc(total);
  if (!tx || !rx || !buf || !dst)
    return 1;
  memset(buf, 7, total);
  memset(dst, 0, total);
  unsigned char hdr[DC_FRAME_BYTES] = {1}, tag[DC_SEAL_TAG_BYTES];
  printf("%10s %14s %14s %14s\n", "frame", "tag GB/s", "check GB/s",
         "memcpy GB/s");
  for (size_t f = 1024; f <= (4u << 20); f *= 4) {
    double best_t = 1e9, best_c = 1e9, best_m = 1e9;
    for (int r = 0; r < reps; r++) {
      double t0 = now();
      for (size_t at = 0; at + f <= total; at += f) {
        dc_seal_tag(tx, hdr, sizeof hdr, buf + at, f, tag);
        dc_seal_sent(tx);
      }
      double t1 = now();
      int bad = 0;
      for (size_t at = 0; at + f <= total; at += f) {
        dc_seal_begin(rx, hdr, sizeof hdr);
        dc_seal_update(rx, buf + at, f);
        bad += !dc_seal_check(rx, tag); /* only the last matches */
      }
      double t2 = now();
      memcpy(dst, buf, total);
      double t3 = now();
      if (bad != (int)(total / f) - 1) {
        fprintf(stderr, "seal_rate: %d tags failed, want %zu\n", bad,
                total / f - 1);
        return 1;
      }
      best_t = t1 - t0 < best_t ? t1 - t0 : best_t;
      best_c = t2 - t1 < best_c ? t2 - t1 : best_c;
      best_m = t3 - t2 < best_m ? t3 - t2 : best_m;
    }
    double n = (double)(total / f * f);
    printf("%10zu %14.2f %14.2f %14.2f\n", f, n / best_t / 1e9,
           n / best_c / 1e9, (double)total / best_m / 1e9);
  }
  dc_seal_free(tx);
  dc_seal_free(rx);
  free(buf);
  free(dst);
  return 0;
}
