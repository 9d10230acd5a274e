/* Slurm's compressed host lists (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST):
 * "n[1-3,7],gpu[01-02]" is n1 n2 n3 n7 gpu01 gpu02. A range keeps the zero
 * padding of its first number; several brackets in one name ("r[1-2]n[1-2]")
 * expand left to right, the last varying fastest, as Slurm's do. */
#ifndef DC_CONFIG_NODELIST_H
#define DC_CONFIG_NODELIST_H

#include <stddef.h>

#include "distcomm.h"

/* How many hosts list names (*count), and the index-th of them in host
 * (index < 0: only count). DC_ERR_CONFIG naming the list and the fault
 * when the list is malformed or index is past its end. */
dc_status dc_nodelist_host(const char *list, long index, char *host, size_t n,
                           long *count, char *err, size_t errlen);

#endif
