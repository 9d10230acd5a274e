/* Start-up's waiting lines: when they are due (config/waiting.h). */
#include "config/waiting.h"

#include "base/clock.h"
#include "config/env.h"

#define PERIOD 30.0 /* seconds between lines after the first */

dc_waiting dc_waiting_start(void) {
  double now = dc_now();
  return (dc_waiting){now, now + dc_env_double(DC_ENV_WAIT_NOTE)};
}

int dc_waiting_due(dc_waiting *w) {
  double now = dc_now();
  if (now < w->next)
    return 0;
  w->next = now + PERIOD;
  return 1;
}

double dc_waiting_until(const dc_waiting *w, double deadline) {
  return w->next < deadline ? w->next : deadline;
}

double dc_waiting_for(const dc_waiting *w) { return dc_now() - w->start; }
