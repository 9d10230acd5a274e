/* libFuzzer target: the launcher -> agent wire (tools/launch/wire.h), as the
 * agent reads it from ssh's stdin: the frame reader (inbox.c) fed in pieces
 * of a size the first byte picks, so that frames arrive cut anywhere; the
 * setup frames go to the setup parser (agent_setup.c) up to DCL_W_GO, the
 * frames after it are taken apart as the agent does (a rank at the front).
 * A header announcing more than DCL_WIRE_MAX must be refused, and the
 * reader's buffer must never hold more than one largest frame and a piece. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent_setup.h"
#include "inbox.h"
#include "wire.h"

static void check_setup(const struct dcl_agent_setup *s) {
  if (s->argc > 0 && (s->argv == NULL || s->argv[s->argc] != NULL))
    abort();
  for (size_t i = 0; i < s->n_ranks; i++)
    if (s->ranks[i] < 0)
      abort();
  if (s->opts.n_envs > 0 && s->opts.envs[s->opts.n_envs] != NULL)
    abort();
}

/* Takes the whole frames in the inbox; returns -1 once the agent would stop. */
static int take_frames(struct dcl_inbox *in, struct dcl_agent_setup *s,
                       int *phase) {
  struct dcl_frame f;
  int got;
  while ((got = dcl_inbox_next(in, &f)) == 1) {
    if (f.len > DCL_WIRE_MAX || f.payload < in->buf ||
        f.payload + f.len > in->buf + in->len)
      abort();
    if (*phase == 0) {
      int rc = dcl_setup_take(s, &f);
      check_setup(s);
      if (rc < 0)
        return -1;
      *phase = rc;
    } else if (f.len >= DCL_WIRE_RANK) {
      volatile unsigned long rank = dcl_wire_get32(f.payload);
      (void)rank;
    }
  }
  if (got < 0 && f.len <= DCL_WIRE_MAX)
    abort(); /* refused a frame that was not too large */
  return got < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  size_t piece = 1 + data[0] % 64;
  struct dcl_inbox in = {0};
  struct dcl_agent_setup s;
  memset(&s, 0, sizeof s);
  int phase = 0;
  for (size_t off = 1; off < size; off += piece) {
    size_t n = size - off < piece ? size - off : piece;
    if (dcl_inbox_put(&in, data + off, n) != 0)
      abort(); /* a few KiB at most */
    if (in.len - in.off > DCL_WIRE_HEADER + DCL_WIRE_MAX + piece)
      abort();
    if (take_frames(&in, &s, &phase) != 0)
      break;
  }
  dcl_setup_free(&s);
  dcl_inbox_free(&in);
  return 0;
}
