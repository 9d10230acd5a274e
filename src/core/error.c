/* Status texts, per-group failure detail and logging. */
#include <stdarg.h>
#include <stdio.h>

#include "core/group.h"

const char *dc_version(void) { return DISTCOMM_VERSION_STRING; }

const char *dc_strerror(dc_status status) {
  switch (status) {
#define DC_STATUS_TEXT_(name, value, text)                                     \
  case DC_##name:                                                              \
    return text;
    DC_STATUS_MAP(DC_STATUS_TEXT_)
#undef DC_STATUS_TEXT_
  }
  return "unknown status";
}

const char *dc_status_name(dc_status status) {
  switch (status) {
#define DC_STATUS_NAME_(name, value, text)                                     \
  case DC_##name:                                                              \
    return #name;
    DC_STATUS_MAP(DC_STATUS_NAME_)
#undef DC_STATUS_NAME_
  }
  return "UNKNOWN";
}

/* Failures of the wire poison the group: its streams may be out of step. */
static int poisons(dc_status st) {
  return st == DC_ERR_TIMEOUT || st == DC_ERR_PEER_LOST ||
         st == DC_ERR_MISMATCH || st == DC_ERR_SYSTEM || st == DC_ERR_AUTH ||
         st == DC_ERR_NOMEM || st == DC_ERR_INTERRUPTED;
}

dc_status dc_vfail(dc_group *g, dc_status st, const char *fmt, va_list ap) {
  if (g->failed != DC_OK)
    return g->failed; /* keep the first failure's detail */
  /* op_name "": a set-up whose caller names the op itself */
  const char *op = g->op_name ? g->op_name : "distcomm";
  int n = *op ? snprintf(g->err, sizeof g->err, "%s: ", op) : 0;
  if (n < 0 || (size_t)n >= sizeof g->err)
    n = 0;
  vsnprintf(g->err + n, sizeof g->err - (size_t)n, fmt, ap);
  if (poisons(st)) {
    g->failed = st;
    dc_log(g, "failed: %s", g->err);
    if (g->ops->poison)
      g->ops->poison(g);
  }
  return st;
}

dc_status dc_fail(dc_group *g, dc_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st = dc_vfail(g, st, fmt, ap);
  va_end(ap);
  return st;
}

dc_status dc_fail_as(dc_group *g, const char *op, dc_status st, const char *fmt,
                     ...) {
  va_list ap;
  va_start(ap, fmt);
  g->op_name = op;
  st = dc_vfail(g, st, fmt, ap);
  va_end(ap);
  return st;
}

static _Thread_local char init_err[512];

const char *dc_last_error(void) { return init_err; }

dc_status dc_init_fail(dc_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(init_err, sizeof init_err, fmt, ap);
  va_end(ap);
  return st;
}

void dc_log(const dc_group *g, const char *fmt, ...) {
  if (g ? !g->verbose : !dc_env_verbose())
    return;
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[distcomm rank %d] %s\n", g ? g->rank : -1, line);
}
