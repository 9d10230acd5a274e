/* Unit tests of src/transport/auth.c (job-token challenge-response) and of
 * the handshake messages in src/transport/frame.c (hello, proof). */
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
  dc_auth_bind b = {.job = 0x1234, .group = 1, .connector = 3, .acceptor = 1,
                    .size = 4, .lane = 2};
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

/* ---- tokens --------------------------------------------------------------- */

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

/* ---- proofs --------------------------------------------------------------- */

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
    case 8: x.host_c ^= 1; break;
    case 9: x.host_a ^= 1; break;
    case 10: x.flags_c ^= 2; break;
    case 11: x.flags_a ^= 2; break;
    case 0: x.job++; break;
    case 1: x.group++; break;
    case 2: x.connector++; break;
    case 3: x.acceptor++; break;
    case 4: x.size++; break;
    case 5: x.lane++; break;
    case 6: x.nonce_c[31] ^= 1; break;
    default: x.nonce_a[0] ^= 1; break;
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
  dc_hello h = {.kind = DC_HELLO, .version = DC_WIRE_VERSION, .job = 0xabcdef,
                .group = 7, .rank = 3, .size = 9, .lane = 5, .reason = 0,
                .host = 0x1122334455667788ull, .flags = DC_HELLO_TOKEN}, g;
  for (int i = 0; i < DC_NONCE_BYTES; i++)
    h.nonce[i] = (unsigned char)(i * 7 + 1);
  unsigned char b[DC_HELLO_BYTES];
  dc_hello_encode(&h, b);
  assert_int_equal(dc_hello_decode(b, &g), DC_OK);
  assert_true(g.kind == h.kind && g.version == h.version && g.job == h.job &&
              g.group == h.group && g.rank == h.rank && g.size == h.size &&
              g.lane == h.lane && g.reason == h.reason && g.host == h.host &&
              g.flags == h.flags);
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
