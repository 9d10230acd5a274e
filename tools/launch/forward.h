/* Moving bytes: ranks' output to ours line by line, our stdin to every rank. */
#ifndef DCL_FORWARD_H
#define DCL_FORWARD_H

#include <stdbool.h>

#include "rank.h"

/* Lines longer than this are written in pieces (never a deadlock). */
#define DCL_LINE_MAX 65536
/* Stop reading our stdin while one rank has this much unread input. */
#define DCL_INQ_MAX (4u << 20)

/* Prepares a stream reading fd into out_fd. Returns 0 or -1 (no memory). */
int dcl_stream_init(struct dcl_stream *s, int fd, int out_fd);

/* Reads what is available and writes every complete line, prefixed with
 * "[rank] " when tag is set. At EOF writes the last partial line and closes
 * the stream. Returns true while the stream is still open. */
bool dcl_stream_pump(struct dcl_stream *s, int rank, bool tag);

/* The same for bytes that came another way (a remote agent's frames, the
 * stream's fd is -1). Returns false once our side of it is gone (its reader
 * went away: the rank's end must be closed too) or it was finished. */
bool dcl_stream_put(struct dcl_stream *s, int rank, bool tag, const char *data,
                    size_t len);

/* Writes what is left and closes the stream (used when we stop waiting). */
void dcl_stream_finish(struct dcl_stream *s, int rank, bool tag);

/* Appends data to the rank's input queue, then writes as much as it can. */
void dcl_input_push(struct dcl_rank *r, const char *data, size_t len);

/* Writes queued input to the rank; closes its stdin when it has gone away
 * (EPIPE), or when the queue is empty and eof is true. */
void dcl_input_flush(struct dcl_rank *r, bool eof);

/* Drops the rank's pending input and closes its stdin. */
void dcl_input_close(struct dcl_rank *r);

#endif
