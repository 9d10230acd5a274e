/* Helpers shared by the multi-process test programs. */
#ifndef DC_TESTS_MP_UTIL_H
#define DC_TESTS_MP_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

/* A well-mixed 64-bit value from a 64-bit key (splitmix64 finaliser): the
 * data generators use it so every rank can rebuild every other rank's input. */
uint64_t mp_mix(uint64_t x);

/* Key for (rank, element index, dtype, tag); index must be < 2^40. */
uint64_t mp_key(int rank, size_t index, int dtype, int tag);

/* Wall-clock seconds (CLOCK_REALTIME), comparable between processes, so a
 * script can measure from the moment it killed a rank. */
double mp_wall(void);

/* Monotonic seconds, for durations inside one process. */
double mp_mono(void);

/* malloc that never returns NULL (exits with a message) and never asks for
 * 0 bytes, so count 0 still gives a real pointer. */
void *mp_alloc(size_t bytes);

/* Parse a non-negative decimal; exits with a message when malformed. */
size_t mp_parse_size(const char *what, const char *text);

/* dc_init("any", strict) or exit(2) printing the status and detail. */
dc_group *mp_init_or_die(const char *prog);

#endif
