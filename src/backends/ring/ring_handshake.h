/* The handshake on a ring connection, shared by its two ends:
 * ring_connect.c dials and says hello, ring_accept.c answers. The messages
 * are in transport/frame.h, the job-token proofs in transport/auth.h. */
#ifndef DC_BACKENDS_RING_HANDSHAKE_H
#define DC_BACKENDS_RING_HANDSHAKE_H

#include "backends/ring/ring.h"
#include "transport/auth.h"
#include "transport/frame.h"

/* This rank's hello (or reply) of the given kind on a lane; a fresh nonce
 * and the token flag when the job has a token, the secure flag with
 * DISTCOMM_SECURE (both under the proofs and the session key). */
static inline dc_hello ring_hello(const ring_plan *p, const dc_auth *auth,
                                  uint32_t kind, int lane) {
  dc_hello h = {.kind = kind, .version = DC_WIRE_VERSION, .job = p->job,
                .group = p->group, .rank = (uint32_t)p->rank,
                .size = (uint32_t)p->size, .lane = (uint32_t)lane,
                .host = p->host,
                .flags = (auth->on ? DC_HELLO_TOKEN : 0u) |
                         (auth->secure ? DC_HELLO_SECURE : 0u)};
  dc_auth_nonce(auth, h.nonce);
  return h;
}

/* Accept every connection this rank expects (ring_accepts), handshaking
 * several at once: a stranger is refused and logged (dc_log) and set-up
 * goes on. DC_ERR_TIMEOUT at deadline, err naming the missing rank and the
 * last refusal. */
dc_status ring_accept_all(dc_group *g, dc_tcp *t, const ring_plan *p,
                          const dc_auth *auth, double deadline, char *err,
                          size_t errlen);

#endif
