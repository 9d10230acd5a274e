/* The clock every layer waits by: the bottom of src/, so that the
 * transport and the bootstraps read it without naming the group. */
#ifndef DC_BASE_CLOCK_H
#define DC_BASE_CLOCK_H

/* Monotonic clock in seconds. */
double dc_now(void);

#endif
