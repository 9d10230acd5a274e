/* libFuzzer target: the connection handshake as an acceptor reads it
 * (src/transport/frame.c): the prefix check on a partial hello, the hello,
 * then the job-token proof message, and checking a proof (auth.c), or a
 * refusal's MAC as a dialer does (dial.c), that no stranger can have made.
 * Each decoder gets an exact-size heap copy, so ASan sees any read past
 * it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/auth.h"
#include "transport/frame.h"
#include "transport/handshake.h"

static unsigned char *copy(const uint8_t *data, size_t n) {
  unsigned char *p = malloc(n ? n : 1);
  if (!p)
    abort();
  memcpy(p, data, n);
  return p;
}

/* A decoded message encodes back to the same bytes: no field is lost. */
static void check_hello(const unsigned char *in) {
  dc_hello h;
  unsigned char out[DC_HELLO_BYTES];
  if (dc_hello_decode(in, &h) != DC_OK)
    return;
  dc_hello_encode(&h, out);
  if (memcmp(in, out, sizeof out) != 0 || !dc_hello_reason_text(h.reason))
    abort();
}

static const dc_auth *job_auth(void) {
  static dc_auth a;
  static int ready;
  char err[256];
  if (!ready && dc_auth_from_token("fuzz-token-0123456789abcdef", &a, err,
                                   sizeof err) != DC_OK)
    abort(); /* libsodium is needed to fuzz the proof check */
  ready = 1;
  return &a;
}

static void check_proof(const unsigned char *in, const unsigned char *hello) {
  unsigned char mac[DC_AUTH_PROOF_BYTES], out[DC_PROOF_BYTES];
  if (dc_proof_decode(in, mac) != DC_OK)
    return;
  dc_proof_encode(mac, out);
  if (memcmp(in, out, sizeof out) != 0)
    abort();
  dc_auth_bind b = {.job = 1, .group = 1, .connector = 1, .size = 2};
  memcpy(b.nonce_c, hello + 48, DC_AUTH_NONCE_BYTES);
  if (dc_auth_verify(job_auth(), &b, DC_AUTH_BY_CONNECTOR, mac))
    abort(); /* a forged proof passed */
  unsigned char mine[DC_HELLO_BYTES] = {0}, m[DC_REFUSAL_MSG_BYTES];
  dc_refusal_msg(hello, mine, 0, m);
  if (dc_auth_mac_ok(job_auth(), DC_REFUSAL_LABEL, m, sizeof m, mac))
    abort(); /* a forged refusal passed */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t n = size < DC_HELLO_BYTES ? size : DC_HELLO_BYTES;
  unsigned char *p = copy(data, n);
  uint32_t version = 0;
  dc_status st = dc_hello_peek(p, n, &version);
  if (st != DC_OK && st != DC_ERR_AUTH &&
      !(st == DC_ERR_MISMATCH && version != DC_WIRE_VERSION))
    abort();
  if (n == DC_HELLO_BYTES)
    check_hello(p);
  if (size >= DC_HELLO_BYTES + DC_PROOF_BYTES) {
    unsigned char *q = copy(data + DC_HELLO_BYTES, DC_PROOF_BYTES);
    check_proof(q, p);
    free(q);
  }
  free(p);
  return 0;
}
