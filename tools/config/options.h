/* distcomm-config's command line (mlx.distributed_config's options). */
#ifndef DCC_OPTIONS_H
#define DCC_OPTIONS_H

#include <stdbool.h>

#include "config.h"

struct dcc_options {
  char *hosts[DCC_MAX_HOSTS]; /* ssh destinations, in rank order */
  int nhosts;
  bool direct; /* --over direct (default) rather than ethernet */
  bool mesh;   /* --backend mesh rather than ring */
  const char *output;
  bool dot, auto_setup, verbose;
  bool ignore_unreachable; /* drop hosts ssh cannot reach, with a warning */
  const char *envs[DCC_MAX_ENVS]; /* --env K=V */
  int nenvs;
};

/* Returns 0 to go on, 1 when --help was printed, -1 after a usage error
 * (already reported). Strings point into argv or into a static buffer. */
int dcc_parse_options(int argc, char **argv, struct dcc_options *o);

#endif
