/* Slurm's compressed host lists (config/nodelist.h): counted and indexed
 * without expanding them, so a list of thousands of hosts costs nothing. */
#include <stdio.h>
#include <string.h>

#include "config/nodelist.h"

#define MAX_HOSTS 100000000L /* far past any cluster: bounds the products */

typedef struct span {
  const char *s, *e; /* [s, e): one name of the list, brackets and all */
} span;

/* A decimal number of up to 9 digits at *p (moved past it). */
static int number(const char **p, const char *e, long *v, int *width) {
  const char *q = *p;
  *v = 0;
  while (q < e && *q >= '0' && *q <= '9' && q - *p < 9)
    *v = *v * 10 + (*q++ - '0');
  *width = (int)(q - *p);
  if (*width == 0 || (q < e && *q >= '0' && *q <= '9'))
    return 0;
  *p = q;
  return 1;
}

typedef struct range {
  long lo, hi;
  int width; /* digits of lo as written: the zero padding kept */
} range;

/* The r-th "lo" or "lo-hi" inside the brackets [s, e); returns the next
 * one's start, NULL when malformed. */
static const char *one_range(const char *s, const char *e, range *r) {
  if (!number(&s, e, &r->lo, &r->width))
    return NULL;
  r->hi = r->lo;
  int w;
  if (s < e && *s == '-') {
    s++;
    if (!number(&s, e, &r->hi, &w) || r->hi < r->lo)
      return NULL;
  }
  if (s < e && *s != ',')
    return NULL;
  return s < e ? s + 1 : s;
}

/* The names [s, e) stands for; 0 when malformed (why says how). */
static long count(span x, char *why, size_t wn) {
  const char *lb = memchr(x.s, '[', (size_t)(x.e - x.s));
  const char *rb = memchr(x.s, ']', (size_t)(x.e - x.s));
  if (!lb && !rb)
    return 1;
  if (!lb || !rb || rb < lb || memchr(lb + 1, '[', (size_t)(rb - lb - 1))) {
    snprintf(why, wn, "unbalanced brackets");
    return 0;
  }
  long n = 0;
  range r;
  for (const char *p = lb + 1; p < rb; n += r.hi - r.lo + 1)
    if (!(p = one_range(p, rb, &r))) {
      snprintf(why, wn, "'%.*s' is not a list of numbers and ranges lo-hi",
               (int)(rb - lb - 1), lb + 1);
      return 0;
    }
  if (n == 0) {
    snprintf(why, wn, "empty brackets");
    return 0;
  }
  long rest = count((span){rb + 1, x.e}, why, wn);
  if (rest > 0 && n > MAX_HOSTS / rest) {
    snprintf(why, wn, "more than %ld hosts", MAX_HOSTS);
    return 0;
  }
  return n * rest;
}

/* Append the k-th name of x (valid: counted before) to out[*used..n). */
static int name_at(span x, long k, char *out, size_t n, size_t *used) {
  const char *lb = memchr(x.s, '[', (size_t)(x.e - x.s));
  const char *pe = lb ? lb : x.e;
  int w = snprintf(out + *used, n - *used, "%.*s", (int)(pe - x.s), x.s);
  if (w < 0 || (size_t)w >= n - *used)
    return 0;
  *used += (size_t)w;
  if (!lb)
    return 1;
  const char *rb = memchr(lb, ']', (size_t)(x.e - lb));
  char ignore[8];
  long rest = count((span){rb + 1, x.e}, ignore, sizeof ignore), i = k / rest;
  range r;
  for (const char *p = one_range(lb + 1, rb, &r); i > r.hi - r.lo;
       p = one_range(p, rb, &r))
    i -= r.hi - r.lo + 1;
  w = snprintf(out + *used, n - *used, "%0*ld", r.width, r.lo + i);
  if (w < 0 || (size_t)w >= n - *used)
    return 0;
  *used += (size_t)w;
  return name_at((span){rb + 1, x.e}, k % rest, out, n, used);
}

/* The next name of the list from *p: up to a comma outside brackets;
 * *more says a comma ended it. */
static span next_name(const char **p, int *more) {
  span x = {*p, *p};
  int depth = 0;
  for (; *x.e && (*x.e != ',' || depth > 0); x.e++)
    depth += *x.e == '[' ? 1 : *x.e == ']' ? -1 : 0;
  *more = *x.e == ',';
  *p = *more ? x.e + 1 : x.e;
  return x;
}

dc_status dc_nodelist_host(const char *list, long index, char *host, size_t n,
                           long *count_out, char *err, size_t errlen) {
  char why[160] = "";
  long total = 0, k = index;
  const char *p = list;
  int found = 0;
  *count_out = 0;
  for (int more = 1; more && !why[0];) {
    span x = next_name(&p, &more);
    long c = x.e > x.s ? count(x, why, sizeof why) : 0;
    if (x.e == x.s)
      snprintf(why, sizeof why, "an empty name");
    if (!why[0] &&
        strspn(x.s, "-_.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO"
                    "PQRSTUVWXYZ0123456789[],") < (size_t)(x.e - x.s))
      snprintf(why, sizeof why, "'%.*s' holds a character no host name has",
               (int)(x.e - x.s), x.s);
    size_t used = 0;
    if (!why[0] && !found && k >= 0 && k < c) {
      if (!name_at(x, k, host, n, &used))
        snprintf(why, sizeof why, "a name longer than %zu bytes", n - 1);
      found = 1;
    }
    k -= c;
    total += c;
  }
  if (!why[0] && index >= total)
    snprintf(why, sizeof why, "no host %ld: it names %ld", index, total);
  if (why[0]) {
    snprintf(err, errlen, "host list '%s': %s", list, why);
    return DC_ERR_CONFIG;
  }
  *count_out = total;
  return DC_OK;
}
