/* The two ways distcomm-config runs once every host has answered. */
#ifndef DCC_RUN_H
#define DCC_RUN_H

#include <stdio.h>

#include "config.h"
#include "options.h"

/* "distcomm-config: <message>\n" on stderr. */
void dcc_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes the hostfile with emit() to --output (through a temporary file
 * renamed into place) or to stdout. Returns 0, or 1 after an error. */
int dcc_write_hostfile(const struct dcc_options *o,
                       void (*emit)(FILE *, const void *), const void *arg);

/* --over direct: probe, check the ring or mesh, address, write. Returns
 * the exit status. */
int dcc_run_direct(const struct dcc_options *o, struct dcc_topo *t);

#endif
