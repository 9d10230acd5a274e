/* Small helpers shared by the launcher's files: messages, time, randomness. */
#ifndef DCL_UTIL_H
#define DCL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DCL_PROG "distcomm-launch"

/* Set once from --verbose; read by dcl_info(). */
extern bool dcl_verbose;
/* Said after the program name when set, e.g. "rank 2 on 10.0.0.3" (the
 * remote agent, so that its messages name the rank and host). */
extern char dcl_where[128];

/* "distcomm-launch: <message>\n" on stderr. */
void dcl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when --verbose was given. */
void dcl_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes all of buf, retrying on EINTR and short writes.
 * Returns 0, or -1 with errno set (EPIPE included). */
int dcl_write_all(int fd, const void *buf, size_t len);

/* Monotonic milliseconds, for deadlines that must not jump with the clock. */
int64_t dcl_now_ms(void);

/* Fills buf from getrandom(); returns 0 or -1. */
int dcl_random(void *buf, size_t len);

/* Parses a decimal integer in [lo, hi]; returns 0 or -1 (junk, overflow). */
int dcl_parse_long(const char *s, long lo, long hi, long *out);

/* The whole of a --hostfile as a string (caller frees); NULL after printing
 * why. */
char *dcl_read_hostfile(const char *path);

#endif
