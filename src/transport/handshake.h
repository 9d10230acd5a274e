/* The handshake on a mesh connection, shared by its two ends: dial.c
 * dials and says hello, accept.c answers. The messages
 * are in transport/frame.h, the job-token proofs in transport/auth.h. */
#ifndef DC_TRANSPORT_HANDSHAKE_H
#define DC_TRANSPORT_HANDSHAKE_H

#include <string.h>

#include "base/clock.h"
#include "transport/engine.h"
#include "transport/mesh.h"
#include "transport/auth.h"
#include "transport/frame.h"

/* This rank's hello (or reply) of the given kind on a lane; a fresh nonce
 * and the token flag when the job has a token, the secure flag with
 * DISTCOMM_SECURE (both under the proofs and the session key). */
static inline dc_hello dc_engine_hello(const dc_engine_plan *p,
                                       const dc_auth *auth, uint32_t kind,
                                       int lane) {
  dc_hello h = {.kind = kind,
                .version = DC_WIRE_VERSION,
                .job = p->job,
                .group = p->group,
                .rank = (uint32_t)p->rank,
                .size = (uint32_t)p->size,
                .lane = (uint32_t)lane,
                .lanes = (uint32_t)dc_plan_lanes(p),
                .host = p->host,
                .flags = (auth->on ? DC_HELLO_TOKEN : 0u) |
                         (auth->secure ? DC_HELLO_SECURE : 0u)};
  dc_auth_nonce(auth, h.nonce);
  return h;
}

/* With a job token a refusal is followed by a proof message whose MAC
 * (under its own label) covers the refusal, the hello it answers as it
 * arrived (the dialer's nonce, job, group and rank) and the refusing rank:
 * a stranger can neither forge one nor replay one for another hello.
 * Without a token nothing can be authenticated and a refusal is believed
 * as it comes. */
#define DC_REFUSAL_LABEL "distcomm refusal"
#define DC_REFUSAL_MSG_BYTES (2 * DC_HELLO_BYTES + 4)

static inline void dc_refusal_msg(const unsigned char refusal[DC_HELLO_BYTES],
                                  const unsigned char hello[DC_HELLO_BYTES],
                                  uint32_t acceptor,
                                  unsigned char m[DC_REFUSAL_MSG_BYTES]) {
  memcpy(m, refusal, DC_HELLO_BYTES);
  memcpy(m + DC_HELLO_BYTES, hello, DC_HELLO_BYTES);
  dc_put32(m + 2 * DC_HELLO_BYTES, acceptor);
}

/* Same-host peers' shared-memory pipes and single copy, after connecting
 * (setup_shm.c). Failures go through the hooks. */
dc_status dc_engine_setup_shm(dc_engine *t, const dc_engine_plan *p);

/* Accept every connection this rank expects (dc_plan_accepts), handshaking
 * several at once: a stranger is refused and logged (dc_engine_log) and set-up
 * goes on, on the listeners and their Unix twins. DC_ERR_TIMEOUT at
 * deadline, err naming the missing rank and the last refusal. */
dc_status dc_engine_accept_all(dc_engine *t, const dc_engine_plan *p,
                               const dc_auth *auth, double deadline, char *err,
                               size_t errlen);

#endif
