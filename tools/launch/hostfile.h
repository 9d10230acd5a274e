/* The ring hostfile (MLX's format) in a private temporary file, and job ids. */
#ifndef DCL_HOSTFILE_H
#define DCL_HOSTFILE_H

#include <stddef.h>

#include "ports.h"

/* Writes [["127.0.0.1:p0",...],...] (conns_per_ip addresses per rank) to a new
 * file made with mkstemps under $TMPDIR (absolute) or /tmp. The file is
 * removed at exit (atexit) or by dcl_remove_hostfile(). Returns the path
 * (owned by this module), or NULL after printing why. */
const char *dcl_write_hostfile(const struct dcl_ports *p, long nranks,
                               long conns_per_ip);

/* The same with the given content (a remote rank's copy of the job's file). */
const char *dcl_write_hostfile_text(const char *json);

/* Removes the hostfile if one was written; safe to call more than once. */
void dcl_remove_hostfile(void);

/* Writes 2*nbytes lowercase hex digits of fresh randomness plus a NUL into
 * out (cap >= 2*nbytes+1). Returns 0 or -1 after printing why. */
int dcl_random_hex(char *out, size_t cap, size_t nbytes);

#endif
