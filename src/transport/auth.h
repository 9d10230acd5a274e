/* Job-token challenge-response (src/transport/auth.c).
 *
 * distcomm-launch gives every job a fresh random DISTCOMM_JOB_TOKEN. When it
 * is set, both ends of every connection prove that they know it, without
 * sending it: each side sends a fresh random nonce, and each answers with a
 * keyed BLAKE2b MAC (libsodium's crypto_generichash) over both nonces, the
 * job, the group, both ranks, the world size, the lane, both hellos' host
 * keys and flags, and the direction.
 * The key is a hash of the token. Fresh nonces stop a recorded proof from
 * being replayed; the direction in the MAC stops a proof from being
 * reflected back to the side that made it. Data is not encrypted.
 *
 * libsodium is loaded at run time (dlopen "libsodium.so.23"), so the library
 * links only libc, and a job without a token never loads it. */
#ifndef DC_TRANSPORT_AUTH_H
#define DC_TRANSPORT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

#define DC_AUTH_NONCE_BYTES 32
#define DC_AUTH_PROOF_BYTES 32
#define DC_AUTH_KEY_BYTES 32
#define DC_AUTH_TOKEN_MIN 16 /* characters: a guessable token protects nothing */

typedef struct dc_auth {
  int on; /* a token is set: peers must prove it */
  unsigned char key[DC_AUTH_KEY_BYTES];
} dc_auth;

/* What one proof is bound to: one handshake on one connection. */
typedef struct dc_auth_bind {
  uint64_t job, group;
  uint32_t connector, acceptor; /* ranks at the two ends */
  uint32_t size, lane;
  uint64_t host_c, host_a;   /* the two hellos' host keys */
  uint32_t flags_c, flags_a; /* and flags: both under the proofs */
  unsigned char nonce_c[DC_AUTH_NONCE_BYTES]; /* the connecting side's */
  unsigned char nonce_a[DC_AUTH_NONCE_BYTES]; /* the accepting side's */
} dc_auth_bind;

/* Who makes a proof: part of what is MACed, so a proof cannot be reflected. */
enum dc_auth_dir { DC_AUTH_BY_ACCEPTOR = 1, DC_AUTH_BY_CONNECTOR = 2 };

/* From DISTCOMM_JOB_TOKEN, read on the first call and then removed from
 * the environment (its key is kept for later calls): a->on = 0 when it is
 * unset or empty. Fails with
 * DC_ERR_UNAVAILABLE when the token is set but libsodium cannot be loaded
 * (never a silent fall back to no authentication), DC_ERR_CONFIG when the
 * token is too short. err says which. */
dc_status dc_auth_from_env(dc_auth *a, char *err, size_t errlen);
/* The same for a given token (NULL or "" = off). */
dc_status dc_auth_from_token(const char *token, dc_auth *a, char *err,
                             size_t errlen);

/* A fresh random nonce; zeros when a is off (nothing to prove). */
void dc_auth_nonce(const dc_auth *a, unsigned char out[DC_AUTH_NONCE_BYTES]);

/* The proof that side dir knows the token, for this handshake. */
void dc_auth_prove(const dc_auth *a, const dc_auth_bind *b, int dir,
                   unsigned char out[DC_AUTH_PROOF_BYTES]);

/* 1 when proof is the one side dir must send (constant-time compare). */
int dc_auth_verify(const dc_auth *a, const dc_auth_bind *b, int dir,
                   const unsigned char proof[DC_AUTH_PROOF_BYTES]);

/* Wipe the key. */
void dc_auth_clear(dc_auth *a);

/* Tests only: the soname to dlopen instead of "libsodium.so.23". Takes effect
 * only before the first token is used in the process (loaded once). */
void dc_auth_set_soname_for_tests(const char *soname);

#endif
