/* The environment variables of env.h: the table and its typed readers. The
 * only getenv() calls of the library are here. */
#include "config/env.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const dc_env_var vars[DC_ENV_COUNT] = {
#define DC_ENV_ROW_(id, name, kind, def, lo, hi, meaning)                      \
  [DC_ENV_##id] = {name, DC_ENV_KIND_##kind, def, lo, hi, meaning},
    DC_ENV_LIST(DC_ENV_ROW_)
#undef DC_ENV_ROW_
};

const dc_env_var *dc_env_info(dc_env_id id) {
  return (unsigned)id < DC_ENV_COUNT ? &vars[id] : NULL;
}

const char *dc_env_str(dc_env_id id) {
  const dc_env_var *v = dc_env_info(id);
  return v ? getenv(v->name) : NULL;
}

/* The entry for a typed read: a wrong kind is a bug in the caller. */
static const dc_env_var *typed(dc_env_id id, dc_env_kind a, dc_env_kind b) {
  const dc_env_var *v = dc_env_info(id);
  assert(v && (v->kind == a || v->kind == b));
  return v && (v->kind == a || v->kind == b) ? v : NULL;
}

static int switch_value(const char *s, int def) {
  if (s && strcmp(s, "0") == 0)
    return 0;
  if (s && strcmp(s, "1") == 0)
    return 1;
  return def;
}

int dc_env_flag(dc_env_id id) {
  const dc_env_var *v = typed(id, DC_ENV_KIND_FLAG, DC_ENV_KIND_SWITCH);
  if (!v)
    return 0;
  const char *s = getenv(v->name);
  if (v->kind == DC_ENV_KIND_FLAG)
    return s && *s && *s != '0';
  return switch_value(s, strcmp(v->def, "auto") == 0 ? -1
                                                     : switch_value(v->def, 0));
}

long long dc_env_int(dc_env_id id) {
  const dc_env_var *v = typed(id, DC_ENV_KIND_COUNT, DC_ENV_KIND_NUMBER);
  if (!v)
    return 0;
  long long def = strtoll(v->def, NULL, 10), n;
  const char *s = getenv(v->name);
  if (!s)
    return def;
  if (v->kind == DC_ENV_KIND_COUNT) {
    n = atoll(s); /* lenient, as atoi: "4x" is 4 */
  } else {
    char *end;
    if (!*s)
      return def;
    n = strtoll(s, &end, 10);
    if (*end != '\0')
      return def;
  }
  return n >= v->lo && n <= v->hi ? n : def;
}

double dc_env_double(dc_env_id id) {
  const dc_env_var *v = typed(id, DC_ENV_KIND_SECONDS, DC_ENV_KIND_SECONDS);
  if (!v)
    return 0;
  const char *s = getenv(v->name);
  char *end = NULL;
  double t = s ? strtod(s, &end) : 0;
  if (!s || end == s || *end != '\0' || !(t > 0))
    return strtod(v->def, NULL);
  return t;
}

/* distcomm-launch --mlx names the ring's variables DISTCOMM_*, since MLX
 * tries its own ring first whenever MLX_RANK and MLX_HOSTFILE are set. */
const char *dc_env_rank(const char **name) {
  dc_env_id id = dc_env_str(DC_ENV_RANK) ? DC_ENV_RANK : DC_ENV_DC_RANK;
  if (name)
    *name = dc_env_info(id)->name;
  return dc_env_str(id);
}

const char *dc_env_hostfile(void) {
  const char *p = dc_env_str(DC_ENV_HOSTFILE);
  return p ? p : dc_env_str(DC_ENV_DC_HOSTFILE);
}

int dc_env_verbose(void) {
  return dc_env_flag(DC_ENV_RING_VERBOSE) || dc_env_flag(DC_ENV_VERBOSE);
}

double dc_default_timeout(void) { return dc_env_double(DC_ENV_TIMEOUT); }
