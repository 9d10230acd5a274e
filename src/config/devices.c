/* MLX_IBV_DEVICES: the device matrix of MLX's JACCL backend; see devices.h. */
#include "config/devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cjson_load.h"
#include "config/hostfile.h"

#define MAX_RANKS                                                              \
  64 /* a rank's addresses towards all peers: the rendezvous's limit */
#define MAX_LINKS 8

/* Only the parser is looked up in libcjson (cjson_load.h): walk the tree by
 * its fields, not cJSON's helper functions. */
static int type_of(const cJSON *e) { return e->type & 0xFF; }
static int is_string(const cJSON *e) {
  return type_of(e) == cJSON_String && e->valuestring;
}
static int length(const cJSON *e) {
  if (type_of(e) != cJSON_Array)
    return -1;
  int n = 0;
  for (const cJSON *c = e->child; c; c = c->next)
    n++;
  return n;
}
static const cJSON *item(const cJSON *list, int i) {
  const cJSON *c = list->child;
  while (c && i-- > 0)
    c = c->next;
  return c;
}

/* One entry: null, a string, or a non-empty list of strings. Returns the
 * number of names (0 for null) or -1. */
static int entry_names(const cJSON *e) {
  if (type_of(e) == cJSON_NULL)
    return 0;
  if (is_string(e))
    return 1;
  if (type_of(e) != cJSON_Array)
    return -1;
  int k = 0;
  for (const cJSON *s = e->child; s; s = s->next, k++)
    if (!is_string(s))
      return -1;
  return k > 0 ? k : -1;
}

/* Checks the shape; *links is the longest list. */
static dc_status shape(const char *what, const cJSON *root, int *n, int *links,
                       char *err, size_t errlen) {
  *n = length(root);
  if (*n < 1 || *n > MAX_RANKS) {
    snprintf(err, errlen,
             "%s: expected a square JSON matrix of 1 to %d rows "
             "(one per rank)",
             what, MAX_RANKS);
    return DC_ERR_CONFIG;
  }
  *links = 1;
  int r = 0;
  for (const cJSON *row = root->child; row; row = row->next, r++) {
    int m = length(row);
    if (m != *n) {
      snprintf(err, errlen, "%s: row %d %s, expected %d entries", what, r,
               m < 0 ? "is not a list" : "has another length", *n);
      return DC_ERR_CONFIG;
    }
    int q = 0;
    for (const cJSON *e = row->child; e; e = e->next, q++) {
      int k = entry_names(e);
      if (k < 0 || (q == r && k != 0)) {
        snprintf(err, errlen, "%s: entry [%d][%d] must be %s", what, r, q,
                 q == r ? "null (a rank has no link to itself)"
                        : "null, a device name or a list of names");
        return DC_ERR_CONFIG;
      }
      if (k > *links)
        *links = k;
    }
  }
  if (*links > MAX_LINKS) {
    snprintf(err, errlen, "%s: at most %d devices per pair", what, MAX_LINKS);
    return DC_ERR_CONFIG;
  }
  return DC_OK;
}

/* Copy one name, without MLX's "rdma_" prefix. */
static dc_status put_name(const char *what, int r, int q, const char *s,
                          char *out, char *err, size_t errlen) {
  if (strncmp(s, "rdma_", 5) == 0)
    s += 5;
  size_t len = strlen(s);
  if (len == 0 || len >= DC_DEVICE_NAME || strchr(s, '/')) {
    snprintf(err, errlen, "%s: entry [%d][%d] is not an interface name", what,
             r, q);
    return DC_ERR_CONFIG;
  }
  memcpy(out, s, len + 1);
  return DC_OK;
}

static dc_status fill(const char *what, const cJSON *root, dc_devices *d,
                      char *err, size_t errlen) {
  int r = 0;
  for (const cJSON *row = root->child; row; row = row->next, r++) {
    int q = 0;
    for (const cJSON *e = row->child; e; e = e->next, q++) {
      int m = entry_names(e);
      for (int k = 0; m > 0 && k < d->links; k++) {
        const cJSON *s = is_string(e) ? e : item(e, k % m);
        char *out =
            d->name[((size_t)r * (size_t)d->n + (size_t)q) * (size_t)d->links +
                    (size_t)k];
        dc_status st = put_name(what, r, q, s->valuestring, out, err, errlen);
        if (st != DC_OK)
          return st;
      }
    }
  }
  return DC_OK;
}

static dc_status parse(const char *what, const char *text, size_t len,
                       dc_devices *d, char *err, size_t errlen) {
  cJSON *root = NULL;
  dc_status st = dc_json_parse(what, text, len, &root, err, errlen);
  if (st == DC_OK)
    st = shape(what, root, &d->n, &d->links, err, errlen);
  if (st == DC_OK) {
    d->name =
        calloc((size_t)d->n * (size_t)d->n * (size_t)d->links, sizeof *d->name);
    st = d->name ? fill(what, root, d, err, errlen) : DC_ERR_NOMEM;
  }
  dc_json_delete(root);
  if (st != DC_OK)
    dc_devices_free(d);
  return st;
}

dc_status dc_devices_load(const char *value, dc_devices *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *v = value + strspn(value, " \t\r\n");
  if (*v == '[')
    return parse("MLX_IBV_DEVICES", v, strlen(v), out, err, errlen);
  char what[256], *text = NULL;
  size_t len = 0;
  dc_config_name(what, sizeof what, "MLX_IBV_DEVICES", value);
  dc_status st = dc_config_read(what, value, &text, &len, err, errlen);
  if (st == DC_OK)
    st = parse(what, text, len, out, err, errlen);
  free(text);
  return st;
}

void dc_devices_free(dc_devices *d) {
  free(d->name);
  memset(d, 0, sizeof *d);
}
