/* A group as the owner of a mesh (transport/mesh.h): the mesh reports
 * through these, so it never holds a dc_group. */
#include <stdarg.h>
#include <stdio.h>

#include "core/group.h"
#include "transport/mesh.h"

static dc_status group_fail(void *arg, dc_status st, const char *fmt,
                            va_list ap) {
  return dc_vfail(arg, st, fmt, ap);
}

static int group_interrupt(void *arg) {
  dc_group *g = arg;
  return g->interrupt && g->interrupt(g->interrupt_arg);
}

static double group_timeout(void *arg) { return ((dc_group *)arg)->timeout_s; }

static void group_log(void *arg, const char *fmt, va_list ap) {
  if (!((dc_group *)arg)->verbose) /* set-up logs a line per connection */
    return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  dc_log(arg, "%s", line);
}

dc_engine_hooks dc_group_hooks(dc_group *g) {
  return (dc_engine_hooks){.fail = group_fail,
                           .interrupt = group_interrupt,
                           .timeout = group_timeout,
                           .log = group_log,
                           .arg = g};
}
