#include "inbox.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

#define READ_CHUNK 65536

/* Room for `want` more bytes; taken frames are dropped from the front first. */
static int make_room(struct dcl_inbox *in, size_t want) {
  if (in->off > 0) {
    memmove(in->buf, in->buf + in->off, in->len - in->off);
    in->len -= in->off;
    in->off = 0;
  }
  if (in->cap - in->len >= want)
    return 0;
  size_t cap = in->len + want;
  unsigned char *grown = realloc(in->buf, cap);
  if (grown == NULL)
    return DCL_INBOX_NOMEM;
  in->buf = grown;
  in->cap = cap;
  return 0;
}

long dcl_inbox_read(struct dcl_inbox *in, int fd) {
  if (make_room(in, READ_CHUNK) != 0)
    return DCL_INBOX_NOMEM;
  ssize_t n = read(fd, in->buf + in->len, in->cap - in->len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
    return DCL_INBOX_AGAIN;
  if (n <= 0)
    return DCL_INBOX_END;
  in->len += (size_t)n;
  return (long)n;
}

int dcl_inbox_put(struct dcl_inbox *in, const void *data, size_t len) {
  if (make_room(in, len) != 0)
    return DCL_INBOX_NOMEM;
  if (len > 0)
    memcpy(in->buf + in->len, data, len);
  in->len += len;
  return 0;
}

int dcl_inbox_next(struct dcl_inbox *in, struct dcl_frame *f) {
  size_t have = in->len - in->off;
  if (have < DCL_WIRE_HEADER)
    return 0;
  const unsigned char *h = in->buf + in->off;
  f->type = h[0];
  f->len = dcl_wire_get32(h + 1);
  f->payload = h + DCL_WIRE_HEADER;
  if (f->len > DCL_WIRE_MAX)
    return -1;
  if (have - DCL_WIRE_HEADER < f->len)
    return 0;
  in->off += DCL_WIRE_HEADER + f->len;
  return 1;
}

void dcl_inbox_free(struct dcl_inbox *in) {
  free(in->buf);
  memset(in, 0, sizeof *in);
}
