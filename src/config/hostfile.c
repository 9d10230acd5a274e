/* MLX's ring hostfile, "ip:port" addresses and MLX_RANK-style integers;
 * see hostfile.h. Every error is one line that says what to fix. */
#include "config/hostfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config/cjson_load.h"

/* Limits that no real cluster reaches but that keep a corrupt or hostile
 * file from costing gigabytes: 16 MiB of JSON, 64 Ki ranks, 64 addresses
 * (parallel connections) per rank, 1 Mi addresses in all. */
#define HF_MAX_BYTES ((size_t)16 << 20)
#define HF_MAX_RANKS 65536
#define HF_MAX_PER_RANK DC_HOSTFILE_MAX_ADDRS
#define HF_MAX_TOTAL (1 << 20)

#define ADDR_MAX_TEXT ((int)sizeof(((dc_addr *)0)->text) - 1)

__attribute__((format(printf, 3, 4))) static void
set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Copy s into dst between quote characters (q == 0: none), escaping quotes,
 * backslashes and non-printable bytes so the message stays one line, and
 * cutting it at max characters with "...": a hostile value cannot flood or
 * forge the message. */
static void escape(char *dst, size_t n, const char *s, size_t max, char q) {
  size_t o = 0;
  if (q)
    dst[o++] = q;
  for (size_t i = 0; s[i] && o + 8 < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i == max) {
      o += (size_t)snprintf(dst + o, n - o, "...");
      break;
    }
    if (c < 0x20 || c > 0x7e)
      o += (size_t)snprintf(dst + o, n - o, "\\x%02x", c);
    else if (c == '\\' || (q && c == (unsigned char)q))
      o += (size_t)snprintf(dst + o, n - o, "\\%c", c);
    else
      dst[o++] = (char)c;
  }
  if (q)
    dst[o++] = q;
  dst[o] = '\0';
}

/* ---- one address ------------------------------------------------------ */

/* Strict decimal: digits only (no sign, no space), value <= max. */
static int parse_decimal(const char *s, size_t len, long max, long *out) {
  long v = 0;
  if (len == 0)
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
    if (v > max)
      return -1;
  }
  *out = v;
  return 0;
}

/* "localhost:5000" deserves a different hint than "10.0.0.x:5000": a host
 * name starts with a letter, a mistyped address with a digit. */
static dc_status hostname_error(const char *host, const char *q, char *err,
                                size_t errlen) {
  int local = strcasecmp(host, "localhost") == 0;
  set_err(err, errlen,
          "%s names a host; hostfile addresses must be numeric IPs (%s)", q,
          local ? "use 127.0.0.1 for localhost"
                : "write the host's IP address");
  return DC_ERR_CONFIG;
}

static dc_status parse_v4(const char *host, int port, dc_addr *out,
                          const char *q, char *err, size_t errlen) {
  struct sockaddr_in *sin = (struct sockaddr_in *)&out->sa;
  if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
    if ((host[0] | 0x20) >= 'a' && (host[0] | 0x20) <= 'z')
      return hostname_error(host, q, err, errlen);
    set_err(err, errlen, "%s is not ip:port (not a numeric IPv4 address)", q);
    return DC_ERR_CONFIG;
  }
  sin->sin_family = AF_INET;
  sin->sin_port = htons((uint16_t)port);
  out->salen = sizeof *sin;
  return DC_OK;
}

/* The scope of a link-local address: a number, or an interface name. A
 * name unknown on this host is kept as scope 0 rather than refused: every
 * rank reads the whole file, and another host's interface names need not
 * exist here. */
static dc_status parse_scope(const char *scope, struct sockaddr_in6 *sin6,
                             const char *q, char *err, size_t errlen) {
  long id;
  size_t len = strlen(scope);
  if (parse_decimal(scope, len, INT_MAX, &id) == 0) { /* real ids are small */
    sin6->sin6_scope_id = (uint32_t)id;
    return DC_OK;
  }
  if (len == 0 || len >= IF_NAMESIZE || strpbrk(scope, " /:%[]")) {
    set_err(err, errlen, "%s has a bad scope id after '%%'", q);
    return DC_ERR_CONFIG;
  }
  sin6->sin6_scope_id = if_nametoindex(scope);
  return DC_OK;
}

static dc_status parse_v6(char *host, int port, dc_addr *out, const char *q,
                          char *err, size_t errlen) {
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->sa;
  char *pct = strchr(host, '%');
  if (pct)
    *pct = '\0';
  if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1) {
    if ((host[0] | 0x20) >= 'g' && (host[0] | 0x20) <= 'z')
      return hostname_error(host, q, err, errlen);
    set_err(err, errlen,
            "%s is not ip:port (not a numeric IPv6 address "
            "inside [])",
            q);
    return DC_ERR_CONFIG;
  }
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons((uint16_t)port);
  out->salen = sizeof *sin6;
  return pct ? parse_scope(pct + 1, sin6, q, err, errlen) : DC_OK;
}

/* Split text into host (copied into host[], brackets removed) and port
 * text; *v6 says whether the host was in brackets. */
static dc_status split_host_port(const char *text, char *host, int *v6,
                                 const char **port, const char *q, char *err,
                                 size_t errlen) {
  const char *end;
  *v6 = text[0] == '[';
  if (*v6) {
    end = strchr(text, ']');
    if (!end || end[1] != ':') {
      set_err(err, errlen, "%s is not ip:port (expected [ipv6]:port)", q);
      return DC_ERR_CONFIG;
    }
    *port = end + 2;
    text++;
  } else {
    end = strrchr(text, ':');
    if (!end) {
      set_err(err, errlen, "%s is not ip:port (no port)", q);
      return DC_ERR_CONFIG;
    }
    if (memchr(text, ':', (size_t)(end - text))) {
      set_err(err, errlen,
              "%s is not ip:port (write an IPv6 address in "
              "brackets: [ipv6]:port)",
              q);
      return DC_ERR_CONFIG;
    }
    *port = end + 1;
  }
  if (end == text) {
    set_err(err, errlen, "%s is not ip:port (no address before the port)", q);
    return DC_ERR_CONFIG;
  }
  memcpy(host, text, (size_t)(end - text)); /* shorter than the whole text */
  host[end - text] = '\0';
  return DC_OK;
}

dc_status dc_addr_parse(const char *text, int allow_port0, dc_addr *out,
                        char *err, size_t errlen) {
  char q[96], host[sizeof out->text];
  const char *port_text;
  long port;
  int v6;
  if (!text || !out) {
    set_err(err, errlen, "no address given");
    return DC_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  escape(q, sizeof q, text, 64, '"');
  size_t len = strnlen(text, sizeof out->text);
  if (len > (size_t)ADDR_MAX_TEXT) {
    set_err(err, errlen, "%s is too long for ip:port (at most %d characters)",
            q, ADDR_MAX_TEXT);
    return DC_ERR_CONFIG;
  }
  dc_status st = split_host_port(text, host, &v6, &port_text, q, err, errlen);
  if (st != DC_OK)
    return st;
  if (parse_decimal(port_text, strlen(port_text), 65535, &port) != 0 ||
      (port == 0 && !allow_port0)) {
    set_err(err, errlen, "%s has a bad port (expected %d..65535)", q,
            allow_port0 ? 0 : 1);
    return DC_ERR_CONFIG;
  }
  st = v6 ? parse_v6(host, (int)port, out, q, err, errlen)
          : parse_v4(host, (int)port, out, q, err, errlen);
  if (st != DC_OK) {
    memset(out, 0, sizeof *out);
    return st;
  }
  memcpy(out->text, text, len + 1);
  return DC_OK;
}

/* ---- the hostfile ----------------------------------------------------- */

static int json_type(const cJSON *item) { return item->type & 0xFF; }

static const char *type_name(const cJSON *item) {
  switch (json_type(item)) {
  case cJSON_Array:
    return "a list";
  case cJSON_Object:
    return "an object";
  case cJSON_String:
    return "a string";
  case cJSON_Number:
    return "a number";
  case cJSON_NULL:
    return "null";
  default:
    return "true/false";
  }
}

/* Addresses an entry gives, or -1 when it is not a list. A bare string
 * counts as a list of one, as in MLX (it iterates every entry, and
 * iterating a JSON string yields the string): ["10.0.0.1:5000", ...]. */
static int entry_count(const cJSON *entry) {
  int n = 0;
  if (json_type(entry) == cJSON_String)
    return 1;
  if (json_type(entry) != cJSON_Array)
    return -1;
  for (const cJSON *c = entry->child; c && n <= HF_MAX_PER_RANK; c = c->next)
    n++;
  return n;
}

static const cJSON *entry_item(const cJSON *entry, const cJSON *prev) {
  if (json_type(entry) == cJSON_String)
    return prev ? NULL : entry;
  return prev ? prev->next : entry->child;
}

static dc_status check_entry(const char *what, const cJSON *entry, int r,
                             int want, char *err, size_t errlen) {
  int n = entry_count(entry);
  if (n < 0) {
    set_err(err, errlen,
            "%s: entry %d is not a list of \"ip:port\" strings "
            "(it is %s%s)",
            what, r, type_name(entry),
            json_type(entry) == cJSON_Object
                ? "; mlx.launch's host list goes to distcomm-launch "
                  "--hostfile, MLX_HOSTFILE is the ring's list of address lists"
                : "");
    return DC_ERR_CONFIG;
  }
  if (n == 0 || n > HF_MAX_PER_RANK) {
    set_err(err, errlen,
            "%s: entry %d %s; each rank lists 1 to %d \"ip:port\""
            " strings",
            what, r, n ? "has too many addresses" : "is empty",
            HF_MAX_PER_RANK);
    return DC_ERR_CONFIG;
  }
  if (want && n != want) {
    set_err(err, errlen,
            "%s: entry %d (rank %d) has %d address%s but entry 0 "
            "has %d; every rank must list the same number",
            what, r, r, n, n == 1 ? "" : "es", want);
    return DC_ERR_CONFIG;
  }
  return DC_OK;
}

/* The shape: a non-empty list of entries, all with the same count. */
static dc_status check_shape(const char *what, const cJSON *root, int *nranks,
                             int *naddrs, char *err, size_t errlen) {
  int r = 0;
  if (json_type(root) != cJSON_Array) {
    set_err(err, errlen,
            "%s: top level is %s, not a list with one list of "
            "\"ip:port\" strings per rank",
            what, type_name(root));
    return DC_ERR_CONFIG;
  }
  *naddrs = 0;
  for (const cJSON *e = root->child; e; e = e->next, r++) {
    if (r == HF_MAX_RANKS) {
      set_err(err, errlen, "%s: more than %d ranks", what, HF_MAX_RANKS);
      return DC_ERR_CONFIG;
    }
    dc_status st = check_entry(what, e, r, *naddrs, err, errlen);
    if (st != DC_OK)
      return st;
    *naddrs = entry_count(e);
  }
  if (r == 0) {
    set_err(err, errlen,
            "%s: is an empty list (expected one list of "
            "\"ip:port\" strings per rank)",
            what);
    return DC_ERR_CONFIG;
  }
  if ((long)r * *naddrs > HF_MAX_TOTAL) {
    set_err(err, errlen, "%s: more than %d addresses in all", what,
            HF_MAX_TOTAL);
    return DC_ERR_CONFIG;
  }
  *nranks = r;
  return DC_OK;
}

static dc_status parse_item(const char *what, const cJSON *item, int r, int i,
                            dc_addr *out, char *err, size_t errlen) {
  char why[256];
  if (json_type(item) != cJSON_String || !item->valuestring) {
    set_err(err, errlen,
            "%s: entry %d address %d is %s, not an \"ip:port\" "
            "string",
            what, r, i, type_name(item));
    return DC_ERR_CONFIG;
  }
  if (dc_addr_parse(item->valuestring, 0, out, why, sizeof why) != DC_OK) {
    set_err(err, errlen, "%s: entry %d address %s", what, r, why);
    return DC_ERR_CONFIG;
  }
  return DC_OK;
}

static dc_status fill(const char *what, const cJSON *root, dc_hostfile *hf,
                      char *err, size_t errlen) {
  int r = 0;
  for (const cJSON *e = root->child; e; e = e->next, r++) {
    int i = 0;
    for (const cJSON *it = entry_item(e, NULL); it; it = entry_item(e, it)) {
      dc_addr *a = &hf->addrs[(size_t)r * hf->naddrs + i];
      dc_status st = parse_item(what, it, r, i++, a, err, errlen);
      if (st != DC_OK)
        return st;
    }
  }
  return DC_OK;
}

/* Order by address bytes (all padding was zeroed, so memcmp is exact), then
 * by position, so that a repeat is reported against its first use. */
static int addr_ptr_cmp(const void *x, const void *y) {
  const dc_addr *a = *(const dc_addr *const *)x;
  const dc_addr *b = *(const dc_addr *const *)y;
  if (a->salen != b->salen)
    return a->salen < b->salen ? -1 : 1;
  int c = memcmp(&a->sa, &b->sa, a->salen);
  if (c)
    return c;
  return a < b ? -1 : a > b;
}

/* Two ranks (or two connections) on one ip:port cannot both listen there;
 * say so now rather than fail or hang at connect time. */
static dc_status check_distinct(const char *what, const dc_hostfile *hf,
                                char *err, size_t errlen) {
  size_t n = (size_t)hf->nranks * hf->naddrs;
  const dc_addr **sorted = malloc(n * sizeof *sorted);
  if (!sorted) {
    set_err(err, errlen, "%s: out of memory", what);
    return DC_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    sorted[i] = &hf->addrs[i];
  qsort(sorted, n, sizeof *sorted, addr_ptr_cmp);
  dc_status st = DC_OK;
  for (size_t i = 1; i < n && st == DC_OK; i++) {
    const dc_addr *a = sorted[i - 1], *b = sorted[i];
    if (a->salen != b->salen || memcmp(&a->sa, &b->sa, a->salen))
      continue;
    char q[96];
    escape(q, sizeof q, b->text, 64, '"');
    set_err(err, errlen,
            "%s: entry %d address %s is also used by entry %d; "
            "every address must be distinct",
            what, (int)((size_t)(b - hf->addrs) / hf->naddrs), q,
            (int)((size_t)(a - hf->addrs) / hf->naddrs));
    st = DC_ERR_CONFIG;
  }
  free(sorted);
  return st;
}

static dc_status parse_named(const char *what, const char *text, size_t len,
                             dc_hostfile *out, char *err, size_t errlen) {
  cJSON *root;
  int nranks = 0, naddrs = 0;
  if (len > HF_MAX_BYTES) {
    set_err(err, errlen, "%s: is larger than %zu MiB", what,
            HF_MAX_BYTES >> 20);
    return DC_ERR_CONFIG;
  }
  dc_status st = dc_json_parse(what, text, len, &root, err, errlen);
  if (st != DC_OK)
    return st;
  st = check_shape(what, root, &nranks, &naddrs, err, errlen);
  dc_hostfile hf = {nranks, naddrs, NULL};
  if (st == DC_OK) {
    hf.addrs = calloc((size_t)nranks * naddrs, sizeof *hf.addrs);
    if (!hf.addrs)
      set_err(err, errlen, "%s: out of memory", what);
    st = hf.addrs ? fill(what, root, &hf, err, errlen) : DC_ERR_NOMEM;
  }
  dc_json_delete(root);
  if (st == DC_OK)
    st = check_distinct(what, &hf, err, errlen);
  if (st != DC_OK) {
    free(hf.addrs);
    return st;
  }
  *out = hf;
  return DC_OK;
}

dc_status dc_hostfile_parse(const char *text, size_t len, dc_hostfile *out,
                            char *err, size_t errlen) {
  if (!out || (!text && len)) {
    set_err(err, errlen, "hostfile: no text given");
    return DC_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  return parse_named("hostfile", text, len, out, err, errlen);
}

/* Read the whole file (any kind: a pipe from <(...) has no size to trust)
 * into a malloc'd buffer, at most HF_MAX_BYTES + 1 bytes. */
static dc_status read_all(int fd, char **buf, size_t *len) {
  size_t cap = 4096, n = 0;
  char *p = malloc(cap);
  for (;;) {
    if (!p)
      return DC_ERR_NOMEM;
    ssize_t got = read(fd, p + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      break;
    n += (size_t)got;
    if (got == 0 || n > HF_MAX_BYTES) {
      *buf = p;
      *len = n;
      return DC_OK;
    }
    if (n == cap) {
      char *bigger = realloc(p, cap *= 2);
      if (!bigger)
        free(p);
      p = bigger;
    }
  }
  int saved = errno;
  free(p);
  errno = saved;
  return DC_ERR_SYSTEM;
}

dc_status dc_config_read(const char *what, const char *path, char **text,
                         size_t *len, char *err, size_t errlen) {
  *text = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  dc_status st = fd < 0 ? DC_ERR_SYSTEM : read_all(fd, text, len);
  int saved = errno;
  if (fd >= 0)
    close(fd);
  if (st == DC_ERR_NOMEM)
    set_err(err, errlen, "%s: out of memory", what);
  if (st == DC_ERR_SYSTEM)
    set_err(err, errlen, "%s: %s", what, strerror(saved));
  return st == DC_OK || st == DC_ERR_NOMEM ? st : DC_ERR_CONFIG;
}

void dc_config_name(char *what, size_t n, const char *var, const char *path) {
  char shown[200];
  escape(shown, sizeof shown, path, 160, 0);
  snprintf(what, n, "%s %s", var, shown);
}

dc_status dc_hostfile_load(const char *path, dc_hostfile *out, char *err,
                           size_t errlen) {
  char what[256];
  char *text = NULL;
  size_t len = 0;
  if (!path || !out) {
    set_err(err, errlen, "MLX_HOSTFILE: no path given");
    return DC_ERR_INVALID;
  }
  memset(out, 0, sizeof *out);
  dc_config_name(what, sizeof what, "MLX_HOSTFILE", path);
  dc_status st = dc_config_read(what, path, &text, &len, err, errlen);
  if (st != DC_OK)
    return st;
  st = parse_named(what, text, len, out, err, errlen);
  free(text);
  return st;
}

void dc_hostfile_free(dc_hostfile *hf) {
  if (!hf)
    return;
  free(hf->addrs);
  memset(hf, 0, sizeof *hf);
}

/* ---- integers from the environment ------------------------------------ */

dc_status dc_env_parse_int(const char *name, const char *value, long *out,
                           char *err, size_t errlen) {
  char q[96];
  long v;
  if (!name)
    name = "value";
  if (!out) {
    set_err(err, errlen, "%s: no output given", name);
    return DC_ERR_INVALID;
  }
  if (!value) {
    set_err(err, errlen, "%s is not set", name);
    return DC_ERR_CONFIG;
  }
  if (parse_decimal(value, strlen(value), INT_MAX, &v) != 0) {
    escape(q, sizeof q, value, 64, '\'');
    set_err(err, errlen, "%s=%s is not a non-negative integer (at most %d)",
            name, q, INT_MAX);
    return DC_ERR_CONFIG;
  }
  *out = v;
  return DC_OK;
}
