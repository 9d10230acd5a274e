/* The monotonic clock (base/clock.h). */
#include <time.h>

#include "base/clock.h"

double dc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
