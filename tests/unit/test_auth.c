/* Unit tests of src/transport/auth.c (job-token challenge-response, the
 * DISTCOMM_SECURE frame seals) and of the handshake messages in
 * src/transport/frame.c (hello, proof). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/auth.h"
#include "transport/frame.h"
#include "transport/handshake.h"

static const char *token = "0123456789abcdef0123456789abcdef";

static dc_auth make(const char *tok) {
  dc_auth a;
  char err[256] = "";
  dc_status st = dc_auth_from_token(tok, &a, err, sizeof err);
  if (st != DC_OK)
    fail_msg("token %s: %s", tok ? tok : "(none)", err);
  return a;
}

static dc_auth_bind bind_of(const dc_auth *a) {
  dc_auth_bind b = {.job = 0x1234,
                    .group = 1,
                    .connector = 3,
                    .acceptor = 1,
                    .size = 4,
                    .lane = 2};
  dc_auth_nonce(a, b.nonce_c);
  dc_auth_nonce(a, b.nonce_a);
  return b;
}

/* ---- libsodium missing (in a child: the library is loaded once) -------- */

static void test_sodium_unavailable(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dc_auth a;
    char err[512] = "";
    dc_auth_set_soname_for_tests("libdistcomm-no-such-sodium.so.9");
    dc_status st = dc_auth_from_token(token, &a, err, sizeof err);
    int ok = st == DC_ERR_UNAVAILABLE && !a.on &&
             strstr(err, "DISTCOMM_JOB_TOKEN is set") &&
             strstr(err, "apt-get install libsodium23") &&
             strstr(err, "libdistcomm-no-such-sodium.so.9");
    if (!ok)
      fprintf(stderr, "unexpected: %d %s\n", st, err);
    _exit(ok ? 0 : 1);
  }
  int wstatus;
  assert_int_equal(waitpid(pid, &wstatus, 0), pid);
  assert_true(WIFEXITED(wstatus));
  assert_int_equal(WEXITSTATUS(wstatus), 0);
}

/* ---- tokens ---------------------------------------------------------------
 */

static void test_no_token(void **state) {
  (void)state;
  unsigned char n[DC_AUTH_NONCE_BYTES], zero[DC_AUTH_NONCE_BYTES] = {0};
  dc_auth a = make(NULL), b = make("");
  assert_false(a.on);
  assert_false(b.on);
  dc_auth_nonce(&a, n);
  assert_memory_equal(n, zero, sizeof n);
  dc_auth_bind bd = bind_of(&a);
  unsigned char proof[DC_AUTH_PROOF_BYTES];
  dc_auth_prove(&a, &bd, DC_AUTH_BY_ACCEPTOR, proof);
  assert_false(dc_auth_verify(&a, &bd, DC_AUTH_BY_ACCEPTOR, proof));
}

static void test_short_token(void **state) {
  (void)state;
  dc_auth a;
  char err[256] = "";
  assert_int_equal(dc_auth_from_token("abc", &a, err, sizeof err),
                   DC_ERR_CONFIG);
  assert_false(a.on);
  assert_non_null(strstr(err, "DISTCOMM_JOB_TOKEN is too short"));
}

static void test_env(void **state) {
  (void)state;
  dc_auth a;
  char err[256];
  setenv("DISTCOMM_JOB_TOKEN", token, 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_OK);
  assert_true(a.on);
  dc_auth b = make(token);
  assert_memory_equal(a.key, b.key, sizeof a.key);
  /* The key is derived: the token's bytes are not it. */
  assert_memory_not_equal(a.key, token, sizeof a.key);
  dc_auth_clear(&a);
  assert_false(a.on);
  /* Read once: gone from the environment (children do not inherit it),
   * and later calls get the key kept in memory, whatever is set now. */
  assert_null(getenv("DISTCOMM_JOB_TOKEN"));
  setenv("DISTCOMM_JOB_TOKEN", "another token, set too late", 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_OK);
  assert_true(a.on);
  assert_memory_equal(a.key, b.key, sizeof a.key);
  unsetenv("DISTCOMM_JOB_TOKEN");
}

/* ---- proofs ---------------------------------------------------------------
 */

static void test_prove_verify(void **state) {
  (void)state;
  dc_auth a = make(token), b = make(token);
  dc_auth_bind bd = bind_of(&a);
  unsigned char pa[DC_AUTH_PROOF_BYTES], pc[DC_AUTH_PROOF_BYTES];
  dc_auth_prove(&a, &bd, DC_AUTH_BY_ACCEPTOR, pa);
  dc_auth_prove(&b, &bd, DC_AUTH_BY_CONNECTOR, pc);
  assert_true(dc_auth_verify(&b, &bd, DC_AUTH_BY_ACCEPTOR, pa));
  assert_true(dc_auth_verify(&a, &bd, DC_AUTH_BY_CONNECTOR, pc));
  /* A proof reflected back to the other direction fails. */
  assert_memory_not_equal(pa, pc, sizeof pa);
  assert_false(dc_auth_verify(&a, &bd, DC_AUTH_BY_CONNECTOR, pa));
  assert_false(dc_auth_verify(&b, &bd, DC_AUTH_BY_ACCEPTOR, pc));
  /* Another token fails. */
  dc_auth c = make("fedcba9876543210fedcba9876543210");
  assert_false(dc_auth_verify(&c, &bd, DC_AUTH_BY_ACCEPTOR, pa));
  /* One flipped bit of the proof fails. */
  pa[7] ^= 1;
  assert_false(dc_auth_verify(&b, &bd, DC_AUTH_BY_ACCEPTOR, pa));
}

/* Every bound field matters: a proof for one handshake fits no other. */
static void test_bound_fields(void **state) {
  (void)state;
  dc_auth a = make(token);
  dc_auth_bind bd = bind_of(&a);
  unsigned char p[DC_AUTH_PROOF_BYTES];
  dc_auth_prove(&a, &bd, DC_AUTH_BY_CONNECTOR, p);
  for (int f = 0; f < 12; f++) {
    dc_auth_bind x = bd;
    switch (f) {
    /* the hellos' host keys and flags too: a man in the middle cannot
     * steer two ranks onto shared memory or change what they offer */
    case 8:
      x.host_c ^= 1;
      break;
    case 9:
      x.host_a ^= 1;
      break;
    case 10:
      x.flags_c ^= 2;
      break;
    case 11:
      x.flags_a ^= 2;
      break;
    case 0:
      x.job++;
      break;
    case 1:
      x.group++;
      break;
    case 2:
      x.connector++;
      break;
    case 3:
      x.acceptor++;
      break;
    case 4:
      x.size++;
      break;
    case 5:
      x.lane++;
      break;
    case 6:
      x.nonce_c[31] ^= 1;
      break;
    default:
      x.nonce_a[0] ^= 1;
      break;
    }
    if (dc_auth_verify(&a, &x, DC_AUTH_BY_CONNECTOR, p))
      fail_msg("field %d is not bound into the proof", f);
  }
  /* Nonces are fresh. */
  dc_auth_bind y = bind_of(&a);
  assert_memory_not_equal(y.nonce_c, bd.nonce_c, DC_AUTH_NONCE_BYTES);
  assert_memory_not_equal(y.nonce_c, y.nonce_a, DC_AUTH_NONCE_BYTES);
}

/* ---- wire messages ------------------------------------------------------ */

static void test_hello_roundtrip(void **state) {
  (void)state;
  dc_hello h = {.kind = DC_HELLO,
                .version = DC_WIRE_VERSION,
                .job = 0xabcdef,
                .group = 7,
                .rank = 3,
                .size = 9,
                .lane = 5,
                .lanes = 6,
                .host = 0x1122334455667788ull,
                .flags = DC_HELLO_TOKEN},
           g;
  for (int i = 0; i < DC_NONCE_BYTES; i++)
    h.nonce[i] = (unsigned char)(i * 7 + 1);
  unsigned char b[DC_HELLO_BYTES];
  dc_hello_encode(&h, b);
  assert_int_equal(dc_hello_decode(b, &g), DC_OK);
  assert_true(g.kind == h.kind && g.version == h.version && g.job == h.job &&
              g.group == h.group && g.rank == h.rank && g.size == h.size &&
              g.lane == h.lane && g.lanes == h.lanes && g.reason == 0 &&
              g.host == h.host && g.flags == h.flags);
  assert_memory_equal(g.nonce, h.nonce, DC_NONCE_BYTES);
  uint32_t v = 0;
  for (size_t n = 0; n <= DC_HELLO_BYTES; n++)
    assert_int_equal(dc_hello_peek(b, n, &v), DC_OK);
  for (size_t i = 0; i < DC_HELLO_BYTES; i++) { /* any flipped byte */
    b[i] ^= 0x40;
    assert_int_equal(dc_hello_decode(b, &g), DC_ERR_AUTH);
    b[i] ^= 0x40;
  }
  h.version = 1;
  dc_hello_encode(&h, b);
  assert_int_equal(dc_hello_peek(b, 8, &v), DC_ERR_MISMATCH);
  assert_int_equal(v, 1);
  assert_int_equal(dc_hello_peek((const unsigned char *)"GET /", 5, &v),
                   DC_ERR_AUTH);
  unsigned char f[DC_FRAME_BYTES];
  dc_frame fr = {.kind = DC_FRAME_DATA, .len = 1ull << 62};
  dc_frame_encode(&fr, f);
  assert_int_equal(dc_hello_peek(f, sizeof f, &v), DC_ERR_AUTH);
}

static void test_proof_roundtrip(void **state) {
  (void)state;
  unsigned char mac[32], got[32], b[DC_PROOF_BYTES];
  for (int i = 0; i < 32; i++)
    mac[i] = (unsigned char)(255 - i);
  dc_proof_encode(mac, b);
  assert_int_equal(dc_proof_decode(b, got), DC_OK);
  assert_memory_equal(got, mac, 32);
  for (int i = 0; i < 8; i++) { /* magic, version, reserved */
    b[i] ^= 1;
    assert_int_equal(dc_proof_decode(b, got), DC_ERR_AUTH);
    b[i] ^= 1;
  }
}

/* ---- frame seals (DISTCOMM_SECURE) -----------------------------------------
 */

static void test_secure_env(void **state) {
  (void)state;
  dc_auth a;
  char err[256];
  unsetenv("DISTCOMM_JOB_TOKEN");
  setenv("DISTCOMM_SECURE", "1", 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_OK); /* kept key */
  assert_true(a.on);
  assert_true(a.secure);
  setenv("DISTCOMM_SECURE", "auth", 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_OK);
  assert_true(a.secure);
  setenv("DISTCOMM_SECURE", "0", 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_OK);
  assert_false(a.secure);
  setenv("DISTCOMM_SECURE", "encrypt", 1);
  assert_int_equal(dc_auth_from_env(&a, err, sizeof err), DC_ERR_CONFIG);
  assert_non_null(strstr(err, "DISTCOMM_SECURE=encrypt"));
  assert_false(a.on); /* a failure hands back no key */
  unsetenv("DISTCOMM_SECURE");
}

/* A frame sealed by one end opens at the other, once, in order. */
static void test_seal_roundtrip(void **state) {
  (void)state;
  dc_auth a = make(token);
  dc_auth_bind b = bind_of(&a);
  dc_seal *c = dc_seal_new(&a, &b, 1), *s = dc_seal_new(&a, &b, 0);
  assert_non_null(c);
  assert_non_null(s);
  unsigned char hdr[DC_FRAME_BYTES], body[1000], tag[DC_SEAL_TAG_BYTES];
  for (size_t i = 0; i < sizeof hdr; i++)
    hdr[i] = (unsigned char)i;
  for (size_t i = 0; i < sizeof body; i++)
    body[i] = (unsigned char)(i * 7);
  for (int frame = 0; frame < 3; frame++) {
    dc_seal_tag(c, hdr, sizeof hdr, body, sizeof body, tag);
    dc_seal_sent(c);
    dc_seal_begin(s, hdr, sizeof hdr);
    dc_seal_update(s, body, 10); /* in pieces, as it arrives */
    dc_seal_update(s, body + 10, sizeof body - 10);
    assert_true(dc_seal_check(s, tag));
  }
  /* And the other way, with the other direction's key. */
  dc_seal_tag(s, hdr, sizeof hdr, NULL, 0, tag);
  dc_seal_sent(s);
  dc_seal_begin(c, hdr, sizeof hdr);
  assert_true(dc_seal_check(c, tag));
  dc_seal_free(c);
  dc_seal_free(s);
}

/* Altered, replayed, reflected, or from another connection: refused. */
static void test_seal_refuses(void **state) {
  (void)state;
  dc_auth a = make(token);
  dc_auth_bind b = bind_of(&a);
  dc_seal *c = dc_seal_new(&a, &b, 1), *s = dc_seal_new(&a, &b, 0);
  unsigned char hdr[DC_FRAME_BYTES] = {1, 2, 3}, body[64] = {9};
  unsigned char tag[DC_SEAL_TAG_BYTES];
  dc_seal_tag(c, hdr, sizeof hdr, body, sizeof body, tag);
  dc_seal_sent(c);
  body[63] ^= 0x40; /* a payload bit */
  dc_seal_begin(s, hdr, sizeof hdr);
  dc_seal_update(s, body, sizeof body);
  assert_false(dc_seal_check(s, tag));
  body[63] ^= 0x40;
  /* The same frame again (a replay): the receiver is at frame 1 now. */
  dc_seal_begin(s, hdr, sizeof hdr);
  dc_seal_update(s, body, sizeof body);
  assert_false(dc_seal_check(s, tag));
  /* Reflected back to its sender: its receive key is the other direction's. */
  dc_seal *c2 = dc_seal_new(&a, &b, 1);
  dc_seal_tag(c2, hdr, sizeof hdr, body, sizeof body, tag);
  dc_seal_begin(c2, hdr, sizeof hdr);
  dc_seal_update(c2, body, sizeof body);
  assert_false(dc_seal_check(c2, tag));
  /* Another connection (other nonces) or another token: other keys. */
  dc_auth_bind b2 = bind_of(&a);
  dc_seal *s2 = dc_seal_new(&a, &b2, 0);
  dc_auth other = make("another token, long enough to count");
  dc_seal *s3 = dc_seal_new(&other, &b, 0);
  dc_seal *fresh = dc_seal_new(&a, &b, 1);
  dc_seal_tag(fresh, hdr, sizeof hdr, body, sizeof body, tag);
  dc_seal_begin(s2, hdr, sizeof hdr);
  dc_seal_update(s2, body, sizeof body);
  assert_false(dc_seal_check(s2, tag));
  dc_seal_begin(s3, hdr, sizeof hdr);
  dc_seal_update(s3, body, sizeof body);
  assert_false(dc_seal_check(s3, tag));
  /* A header bit, with the right frame number: refused too. */
  dc_seal *s4 = dc_seal_new(&a, &b, 0);
  hdr[5] ^= 1;
  dc_seal_begin(s4, hdr, sizeof hdr);
  dc_seal_update(s4, body, sizeof body);
  assert_false(dc_seal_check(s4, tag));
  hdr[5] ^= 1;
  /* A made tag whose frame never went out leaves the count alone. */
  dc_seal *s5 = dc_seal_new(&a, &b, 0);
  dc_seal_tag(fresh, hdr, sizeof hdr, body, 1, tag); /* not sent */
  dc_seal_tag(fresh, hdr, sizeof hdr, body, sizeof body, tag);
  dc_seal_begin(s5, hdr, sizeof hdr);
  dc_seal_update(s5, body, sizeof body);
  assert_true(dc_seal_check(s5, tag));
  dc_seal *seals[] = {c, s, c2, s2, s3, s4, s5, fresh};
  for (size_t i = 0; i < sizeof seals / sizeof *seals; i++)
    dc_seal_free(seals[i]);
}

/* The hellos' host keys and flags are under the session key, as under the
 * proofs: two ends that saw different values derive different keys. */
static void test_seal_binds_hello(void **state) {
  (void)state;
  dc_auth a = make(token);
  dc_auth_bind b = bind_of(&a);
  b.host_c = 0x1111;
  b.flags_c = DC_HELLO_TOKEN | DC_HELLO_SECURE;
  unsigned char hdr[DC_FRAME_BYTES] = {7}, tag[DC_SEAL_TAG_BYTES];
  dc_seal *c = dc_seal_new(&a, &b, 1);
  dc_seal_tag(c, hdr, sizeof hdr, NULL, 0, tag);
  for (int field = 0; field < 4; field++) {
    dc_auth_bind m = b;
    if (field == 0)
      m.host_c ^= 1;
    else if (field == 1)
      m.host_a ^= 1;
    else if (field == 2)
      m.flags_c ^= DC_HELLO_SECURE;
    else
      m.flags_a ^= DC_HELLO_TOKEN;
    dc_seal *s = dc_seal_new(&a, &m, 0);
    dc_seal_begin(s, hdr, sizeof hdr);
    assert_false(dc_seal_check(s, tag));
    dc_seal_free(s);
  }
  dc_seal *s = dc_seal_new(&a, &b, 0);
  dc_seal_begin(s, hdr, sizeof hdr);
  assert_true(dc_seal_check(s, tag));
  dc_seal_free(s);
  dc_seal_free(c);
}

/* A refusal's MAC (handshake.h) fits only the refusal, the hello it
 * answers and the refusing rank, under the job's token: a stranger cannot
 * reuse one for another dialer's hello, reason or rank. */
static int refusal_ok(const dc_auth *a, const unsigned char *refusal,
                      const unsigned char *hello, uint32_t acceptor,
                      const unsigned char *mac) {
  unsigned char m[DC_REFUSAL_MSG_BYTES];
  dc_refusal_msg(refusal, hello, acceptor, m);
  return dc_auth_mac_ok(a, DC_REFUSAL_LABEL, m, sizeof m, mac);
}

static void test_refusal_mac(void **state) {
  (void)state;
  dc_auth a = make(token), other = make("fedcba9876543210fedcba9876543210");
  dc_hello h = {.kind = DC_HELLO,
                .version = DC_WIRE_VERSION,
                .job = 7,
                .rank = 1,
                .size = 2,
                .flags = DC_HELLO_TOKEN};
  dc_hello r = {.kind = DC_HELLO_REFUSED,
                .version = DC_WIRE_VERSION,
                .reason = DC_REFUSE_SIZE};
  unsigned char hb[DC_HELLO_BYTES], rb[DC_HELLO_BYTES], m[DC_REFUSAL_MSG_BYTES];
  unsigned char mac[DC_AUTH_PROOF_BYTES];
  dc_auth_nonce(&a, h.nonce);
  dc_hello_encode(&h, hb);
  dc_hello_encode(&r, rb);
  dc_refusal_msg(rb, hb, 0, m);
  dc_auth_mac(&a, DC_REFUSAL_LABEL, m, sizeof m, mac);
  assert_true(refusal_ok(&a, rb, hb, 0, mac));
  assert_false(refusal_ok(&other, rb, hb, 0, mac)); /* another token */
  assert_false(refusal_ok(&a, rb, hb, 1, mac));     /* another rank */
  r.reason = DC_REFUSE_JOB;                         /* another reason */
  dc_hello_encode(&r, rb);
  assert_false(refusal_ok(&a, rb, hb, 0, mac));
  r.reason = DC_REFUSE_SIZE;
  dc_hello_encode(&r, rb);
  dc_auth_nonce(&a, h.nonce); /* another dialer's hello (its nonce) */
  dc_hello_encode(&h, hb);
  assert_false(refusal_ok(&a, rb, hb, 0, mac));
  dc_auth off = make(NULL); /* without a token nothing is proven */
  assert_false(refusal_ok(&off, rb, hb, 0, mac));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sodium_unavailable),
      cmocka_unit_test(test_no_token),
      cmocka_unit_test(test_short_token),
      cmocka_unit_test(test_env),
      cmocka_unit_test(test_prove_verify),
      cmocka_unit_test(test_bound_fields),
      cmocka_unit_test(test_hello_roundtrip),
      cmocka_unit_test(test_proof_roundtrip),
      cmocka_unit_test(test_secure_env),
      cmocka_unit_test(test_seal_roundtrip),
      cmocka_unit_test(test_seal_refuses),
      cmocka_unit_test(test_seal_binds_hello),
      cmocka_unit_test(test_refusal_mac),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
