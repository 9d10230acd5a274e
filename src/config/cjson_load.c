/* libcjson loaded at run time; see cjson_load.h. */
#include "config/cjson_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef cJSON *(*parse_fn)(const char *value, size_t len, const char **end,
                           cJSON_bool require_nul);
typedef void (*delete_fn)(cJSON *item);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *soname = "libcjson.so.1";
static parse_fn json_parse_fn;
static delete_fn json_delete_fn;
static char load_error[256]; /* written once inside pthread_once */

/* Cast through a union: ISO C has no conversion from void * to a function
 * pointer, and POSIX guarantees dlsym's result is usable this way. */
static void *lookup(void *lib, const char *name) {
  void *sym = dlsym(lib, name);
  if (!sym) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : name);
  }
  return sym;
}

static void load_cjson(void) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "%s", why ? why : soname);
    return;
  }
  /* ParseWithLengthOpts (libcjson >= 1.7.13, like ParseWithLength) also
   * reports where parsing stopped: error positions and trailing text. */
  union {
    void *p;
    parse_fn f;
  } parse = {lookup(lib, "cJSON_ParseWithLengthOpts")};
  union {
    void *p;
    delete_fn f;
  } del = {lookup(lib, "cJSON_Delete")};
  if (!parse.p || !del.p) {
    dlclose(lib); /* nothing from it is in use yet */
    return;
  }
  /* Never closed: trees it allocated may outlive any one caller. */
  json_parse_fn = parse.f;
  json_delete_fn = del.f;
}

void dc_json_set_soname_for_tests(const char *name) { soname = name; }

/* 1-based line and column of byte off, for messages people can act on. */
static void line_col(const char *text, size_t off, size_t *line, size_t *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

/* Offset where cJSON stopped, clamped into [0, len]. */
static size_t stop_offset(const char *text, size_t len, const char *end) {
  if (!end || end < text)
    return 0;
  size_t off = (size_t)(end - text);
  return off > len ? len : off;
}

static int only_space_from(const char *text, size_t len, size_t off) {
  for (; off < len; off++) {
    if (!strchr(" \t\r\n", text[off]) || text[off] == '\0')
      return 0;
  }
  return 1;
}

dc_status dc_json_parse(const char *what, const char *text, size_t len,
                        cJSON **out, char *err, size_t errlen) {
  *out = NULL;
  pthread_once(&load_once, load_cjson);
  if (!json_parse_fn) {
    snprintf(err, errlen,
             "parsing %s needs libcjson1 (apt-get install "
             "libcjson1): %s",
             what, load_error);
    return DC_ERR_UNAVAILABLE;
  }
  if (!text || only_space_from(text, len, 0)) {
    snprintf(err, errlen, "%s: is empty (expected JSON)", what);
    return DC_ERR_CONFIG;
  }
  /* require_nul = 0: the text ends at len; trailing text is checked below.
   * (libcjson also records failures in a global we never read: parsing is
   * safe from several threads, though TSan may see that benign race.) */
  const char *end = NULL;
  cJSON *json = json_parse_fn(text, len, &end, 0);
  size_t off = stop_offset(text, len, end), line, col;
  if (json && only_space_from(text, len, off)) {
    *out = json;
    return DC_OK;
  }
  line_col(text, off, &line, &col);
  snprintf(err, errlen, "%s: %s (line %zu, column %zu)", what,
           json ? "unexpected text after the JSON value" : "not valid JSON",
           line, col);
  if (json)
    json_delete_fn(json);
  return DC_ERR_CONFIG;
}

void dc_json_delete(cJSON *json) {
  if (json && json_delete_fn)
    json_delete_fn(json);
}
