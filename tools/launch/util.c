#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool dcl_verbose = false;
char dcl_where[128];

__attribute__((format(printf, 1, 0))) static void vsay(const char *fmt,
                                                       va_list ap) {
  /* One fprintf per piece on an unbuffered stderr could let a rank's line
   * land in the middle; format into one buffer and write it at once. */
  char line[1024];
  int n = dcl_where[0]
              ? snprintf(line, sizeof line, "%s (%s): ", DCL_PROG, dcl_where)
              : snprintf(line, sizeof line, "%s: ", DCL_PROG);
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2)
    len = sizeof line - 2;
  line[len++] = '\n';
  (void)dcl_write_all(2, line, len);
}

void dcl_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsay(fmt, ap);
  va_end(ap);
}

void dcl_info(const char *fmt, ...) {
  if (!dcl_verbose)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsay(fmt, ap);
  va_end(ap);
}

int dcl_write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

int64_t dcl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dcl_random(void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += got;
    len -= (size_t)got;
  }
  return 0;
}

int dcl_parse_long(const char *s, long lo, long hi, long *out) {
  /* strtol alone would accept " 2", "+2" and "2abc". */
  if (s == NULL || *s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* The whole of a --hostfile as a string; NULL after saying why. */
char *dcl_read_hostfile(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    dcl_error("--hostfile %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0, got;
  char *buf = malloc(cap);
  while (buf != NULL && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *b = realloc(buf, cap *= 2);
      if (b == NULL)
        free(buf);
      buf = b;
    }
  }
  fclose(f);
  if (buf == NULL)
    dcl_error("out of memory");
  else
    buf[n] = '\0';
  return buf;
}
