/* distcomm-config's messages and its one output file. In the library part
 * (dcc_config) so that the unit test can check how the file is written. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

void dcc_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(DCC_PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int dcc_write_hostfile(const struct dcc_options *o,
                       void (*emit)(FILE *, const void *), const void *arg) {
  if (o->output == NULL) {
    emit(stdout, arg);
    return fflush(stdout) == 0 ? 0 : 1;
  }
  /* A fresh name (mkstemp: O_EXCL, never through a planted symlink) in the
   * output's directory, so that rename() puts it in place at once. */
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", o->output) >=
      (int)sizeof tmp) {
    dcc_error("cannot write %s: the name is too long", o->output);
    return 1;
  }
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f == NULL) {
    dcc_error("cannot write %s: %m", fd >= 0 ? tmp : o->output);
    if (fd >= 0) {
      close(fd);
      remove(tmp);
    }
    return 1;
  }
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(
      fd, 0666 & ~mask); /* as fopen() made it: a hostfile others may read */
  emit(f, arg);
  if (ferror(f) | (fclose(f) != 0) || rename(tmp, o->output) != 0) {
    dcc_error("cannot write %s: %m", o->output);
    remove(tmp);
    return 1;
  }
  fprintf(stderr,
          DCC_PROG ": wrote %s; run a job with: distcomm-launch --hostfile %s "
                   "-- <command>\n",
          o->output, o->output);
  return 0;
}
