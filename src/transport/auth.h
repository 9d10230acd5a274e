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
#define DC_AUTH_TOKEN_MIN                                                      \
  16 /* characters: a guessable token protects nothing */

typedef struct dc_auth {
  int on;     /* a token is set: peers must prove it */
  int secure; /* DISTCOMM_SECURE=1: frames on TCP carry a MAC (needs on) */
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
 * unset or empty. a->secure from DISTCOMM_SECURE, read on every call:
 * DC_ERR_CONFIG for a value other than 0, 1 or auth, or for 1 without a
 * token (never a silent fall back to unauthenticated frames). Fails with
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

/* A MAC of msg under a key derived from the token's key and label (the
 * coordinator's messages: src/bootstrap/coordinator.c); zeros when off. */
void dc_auth_mac(const dc_auth *a, const char *label, const void *msg, size_t n,
                 unsigned char out[DC_AUTH_PROOF_BYTES]);
/* 1 when mac is msg's (constant-time compare); 0 when off. */
int dc_auth_mac_ok(const dc_auth *a, const char *label, const void *msg,
                   size_t n, const unsigned char mac[DC_AUTH_PROOF_BYTES]);

/* A token a bootstrap shared among the ranks (PMIx: made by rank 0) for a
 * job whose environment names none (DISTCOMM_JOB_TOKEN and _FILE win):
 * later dc_auth_from_env calls give its key. Fails as dc_auth_from_token. */
dc_status dc_auth_adopt_token(const char *token, char *err, size_t errlen);

/* Wipe the key. */
void dc_auth_clear(dc_auth *a);

/* ---- authenticated frames (DISTCOMM_SECURE) -----------------------------
 *
 * Once both proofs of a handshake are good, both ends derive a session key
 * from the token's key and the whole transcript (both nonces, both hellos'
 * host keys and flags, the job, group, ranks, size and lane): a keyed
 * BLAKE2b, as the proofs. Each direction of the connection has its own key
 * (BLAKE2b of the session key under "c->a" or "a->c"), so a frame cannot be
 * reflected back to its sender. Frame number n in a direction (data and
 * abort frames, counted from 0) is followed by a 16-byte Poly1305 tag over
 * its header and payload, under the one-time key BLAKE2b(direction key, n):
 * a frame altered, dropped, replayed, reordered or moved to another
 * connection fails its tag. Nothing is encrypted. */
#define DC_SEAL_TAG_BYTES 16

typedef struct dc_seal dc_seal;

/* The seal of one connection for the side that is the connector (or not),
 * after both proofs of b were checked; NULL when out of memory. */
dc_seal *dc_seal_new(const dc_auth *a, const dc_auth_bind *b, int is_connector);
/* Wipe the keys and free (NULL is fine). */
void dc_seal_free(dc_seal *s);
/* Sending: the tag of the next outgoing frame (hdr, then payload); the
 * frame's number is taken by dc_seal_sent, once its first byte is out (a
 * frame made but never started leaves the count as it was). */
void dc_seal_tag(dc_seal *s, const unsigned char *hdr, size_t hn,
                 const void *payload, size_t n,
                 unsigned char tag[DC_SEAL_TAG_BYTES]);
void dc_seal_sent(dc_seal *s);
/* Receiving, streamed: begin the next incoming frame with its header, add
 * its payload as it arrives, then check its tag: 1 when it matches
 * (constant-time compare). One frame at a time per seal. */
void dc_seal_begin(dc_seal *s, const unsigned char *hdr, size_t hn);
void dc_seal_update(dc_seal *s, const void *p, size_t n);
int dc_seal_check(dc_seal *s, const unsigned char tag[DC_SEAL_TAG_BYTES]);

/* Tests only: the soname to dlopen instead of "libsodium.so.23". Takes effect
 * only before the first token is used in the process (loaded once). */
void dc_auth_set_soname_for_tests(const char *soname);

#endif
