#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, mkstemps, strsignal, sigabbrev_np */
#endif
#include "hostfile.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static char g_path[PATH_MAX];
static bool g_written;

void dcl_remove_hostfile(void) {
  if (g_written)
    (void)unlink(g_path);
  g_written = false;
}

/* A relative $TMPDIR would break for ranks started with --cwd. */
static const char *temp_dir(void) {
  const char *d = getenv("TMPDIR");
  if (d == NULL || d[0] != '/' || strlen(d) > PATH_MAX - 64)
    return "/tmp";
  return d;
}

static int write_json(FILE *f, const struct dcl_ports *p, long nranks, long k) {
  fputc('[', f);
  for (long r = 0; r < nranks; r++) {
    fputs(r ? ",[" : "[", f);
    for (long i = 0; i < k; i++)
      fprintf(f, "%s\"127.0.0.1:%d\"", i ? "," : "", p->ports[r * k + i]);
    fputc(']', f);
  }
  fputs("]\n", f);
  return ferror(f) ? -1 : 0;
}

/* A new private file under temp_dir(), removed at exit. */
static FILE *create(void) {
  snprintf(g_path, sizeof g_path, "%s/distcomm-hostfile-XXXXXX.json",
           temp_dir());
  int fd = mkstemps(g_path, 5);
  if (fd < 0) {
    dcl_error("cannot create a hostfile in %s: %s", temp_dir(),
              strerror(errno));
    return NULL;
  }
  g_written = true;
  static bool registered;
  if (!registered && atexit(dcl_remove_hostfile) == 0)
    registered = true;
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    dcl_error("cannot write the hostfile %s: %s", g_path, strerror(errno));
  }
  return f;
}

static const char *finish(FILE *f, int bad) {
  if (fclose(f) != 0 || bad) {
    dcl_error("cannot write the hostfile %s: %s", g_path, strerror(errno));
    return NULL;
  }
  return g_path;
}

const char *dcl_write_hostfile(const struct dcl_ports *p, long nranks,
                               long conns_per_ip) {
  FILE *f = create();
  return f == NULL ? NULL : finish(f, write_json(f, p, nranks, conns_per_ip));
}

const char *dcl_write_hostfile_text(const char *json) {
  FILE *f = create();
  return f == NULL ? NULL : finish(f, fputs(json, f) < 0);
}

int dcl_random_hex(char *out, size_t cap, size_t nbytes) {
  unsigned char raw[64];
  if (nbytes > sizeof raw || cap < 2 * nbytes + 1 ||
      dcl_random(raw, nbytes) != 0) {
    dcl_error("cannot get random bytes for the job id: %s", strerror(errno));
    return -1;
  }
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < nbytes; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[2 * nbytes] = '\0';
  return 0;
}
