/* The agent's side of the launcher's frames (wire.h): bytes as they arrive
 * on ssh's stdin, cut into whole frames. A header that announces more than
 * DCL_WIRE_MAX is an error, so the buffer never grows past one largest
 * frame plus one read. */
#ifndef DCL_INBOX_H
#define DCL_INBOX_H

#include <stddef.h>

struct dcl_inbox {
  unsigned char *buf;
  size_t len, cap;
  size_t off; /* the start of the first frame not yet taken */
};

struct dcl_frame {
  int type;
  const unsigned char
      *payload; /* inside the inbox: valid until its next read */
  size_t len;
};

/* dcl_inbox_read's answers besides a byte count. */
#define DCL_INBOX_AGAIN 0  /* nothing now (EINTR, EAGAIN) */
#define DCL_INBOX_END (-1) /* the channel ended (or failed) */
#define DCL_INBOX_NOMEM (-2)

/* Reads what fd has (one read) after the frames not yet taken. Returns the
 * count read, or one of the answers above. */
long dcl_inbox_read(struct dcl_inbox *in, int fd);

/* The same from memory (tests, the fuzzer). Returns 0 or DCL_INBOX_NOMEM. */
int dcl_inbox_put(struct dcl_inbox *in, const void *data, size_t len);

/* The next whole frame: 1 with *f filled, 0 when more bytes are needed, -1
 * when its header announces more than DCL_WIRE_MAX (*f->len says how much). */
int dcl_inbox_next(struct dcl_inbox *in, struct dcl_frame *f);

void dcl_inbox_free(struct dcl_inbox *in);

#endif
