/* Unit tests of frame headers (src/transport/frame.c): the wire layout,
 * round trips of data and abort frames with every field at its extremes,
 * corrupted or out-of-step bytes refused, and the mismatch texts. Hellos
 * and proofs are tested in test_auth.c; here only what it leaves out:
 * hello fields at the extremes of their wire widths, and the refusal
 * texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "transport/frame.h"

static int same(const dc_frame *a, const dc_frame *b) {
  return a->kind == b->kind && a->opcode == b->opcode && a->dtype == b->dtype &&
         a->redop == b->redop && a->seq == b->seq && a->count == b->count &&
         a->len == b->len && a->aux == b->aux;
}

/* Encode, decode, compare; and the decoded frame encodes to the same
 * bytes. */
static void round_trip(const dc_frame *f) {
  unsigned char b[DC_FRAME_BYTES], again[DC_FRAME_BYTES];
  dc_frame g;
  memset(&g, 0x5a, sizeof g);
  dc_frame_encode(f, b);
  assert_int_equal(dc_frame_decode(b, &g), DC_OK);
  assert_true(same(f, &g));
  dc_frame_encode(&g, again);
  assert_memory_equal(b, again, sizeof b);
}

static const dc_frame typical = {.kind = DC_FRAME_DATA,
                                 .opcode = DC_OPC_ALL_REDUCE,
                                 .dtype = DC_FLOAT32,
                                 .redop = DC_SUM,
                                 .seq = 7,
                                 .count = 10,
                                 .len = 40,
                                 .aux = 0};

static void test_layout(void **state) {
  (void)state;
  /* The wire format is fixed little-endian: a peer built elsewhere must
   * read the same fields at the same offsets. */
  dc_frame f = {.kind = DC_FRAME_DATA,
                .opcode = DC_OPC_BROADCAST,
                .dtype = DC_BFLOAT16,
                .redop = DC_MAX,
                .seq = 0x04030201u,
                .count = 0x1211100f0e0d0c0bull,
                .len = 0x1a19181716151413ull,
                .aux = 0x1e1d1c1bu};
  unsigned char b[DC_FRAME_BYTES];
  dc_frame_encode(&f, b);
  static const unsigned char want[DC_FRAME_BYTES] = {'C',
                                                     'D',
                                                     DC_FRAME_DATA,
                                                     DC_OPC_BROADCAST,
                                                     DC_BFLOAT16,
                                                     DC_MAX,
                                                     0,
                                                     0,
                                                     0x01,
                                                     0x02,
                                                     0x03,
                                                     0x04,
                                                     0x0b,
                                                     0x0c,
                                                     0x0d,
                                                     0x0e,
                                                     0x0f,
                                                     0x10,
                                                     0x11,
                                                     0x12,
                                                     0x13,
                                                     0x14,
                                                     0x15,
                                                     0x16,
                                                     0x17,
                                                     0x18,
                                                     0x19,
                                                     0x1a,
                                                     0x1b,
                                                     0x1c,
                                                     0x1d,
                                                     0x1e};
  assert_memory_equal(b, want, 6);          /* magic, kind, op, dtype, op */
  assert_memory_equal(b + 8, want + 8, 24); /* seq, count, len, aux */
  assert_int_equal(b[0] | b[1] << 8, DC_WIRE_MAGIC);
  dc_frame g;
  assert_int_equal(dc_frame_decode(b, &g), DC_OK);
  assert_int_equal(g.check, b[6] | b[7] << 8); /* the check: bytes 6-7 */
  /* the check depends on the fields, not on what f.check held */
  unsigned char c[DC_FRAME_BYTES];
  f.check = 0xdeadbeef;
  dc_frame_encode(&f, c);
  assert_memory_equal(b, c, sizeof b);
}

static void test_round_trips(void **state) {
  (void)state;
  round_trip(&typical);
  dc_frame zero = {0};
  round_trip(&zero);
  dc_frame most = {.kind = UINT8_MAX,
                   .opcode = UINT8_MAX,
                   .dtype = UINT8_MAX,
                   .redop = UINT8_MAX,
                   .seq = UINT32_MAX,
                   .count = UINT64_MAX,
                   .len = UINT64_MAX,
                   .aux = UINT32_MAX};
  round_trip(&most);
  /* every field alone at its extremes, the others typical */
  for (int field = 0; field < 8; field++)
    for (int hi = 0; hi < 2; hi++) {
      dc_frame f = typical;
      uint64_t v = hi ? UINT64_MAX : 0;
      switch (field) {
      case 0:
        f.kind = (uint8_t)v;
        break;
      case 1:
        f.opcode = (uint8_t)v;
        break;
      case 2:
        f.dtype = (uint8_t)v;
        break;
      case 3:
        f.redop = (uint8_t)v;
        break;
      case 4:
        f.seq = (uint32_t)v;
        break;
      case 5:
        f.count = v;
        break;
      case 6:
        f.len = v;
        break;
      case 7:
        f.aux = (uint32_t)v;
        break;
      }
      round_trip(&f);
    }
  /* every opcode, dtype and reduction, and counts past 32 bits */
  for (int op = DC_OPC_ALL_REDUCE; op <= DC_OPC_SETUP; op++)
    for (int dt = DC_BOOL; dt <= DC_COMPLEX64; dt++)
      for (int red = DC_SUM; red <= DC_PROD; red++) {
        dc_frame f = {.kind = DC_FRAME_DATA,
                      .opcode = (uint8_t)op,
                      .dtype = (uint8_t)dt,
                      .redop = (uint8_t)red,
                      .seq = (uint32_t)(op * 1000 + dt),
                      .count = (3ull << 32) + (uint64_t)red,
                      .len = (5ull << 33) + 1,
                      .aux = (uint32_t)op};
        round_trip(&f);
      }
}

/* An abort frame as the engine sends it: the status in aux, the length
 * of the text that follows in len. */
static void test_abort_frame(void **state) {
  (void)state;
  dc_status all[] = {DC_ERR_TIMEOUT, DC_ERR_PEER_LOST, DC_ERR_MISMATCH,
                     DC_ERR_ABORTED, DC_ERR_INTERRUPTED};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    for (uint64_t len = 0; len <= DC_ABORT_TEXT_MAX; len += DC_ABORT_TEXT_MAX) {
      dc_frame f = {
          .kind = DC_FRAME_ABORT, .len = len, .aux = (uint32_t)all[i]};
      unsigned char b[DC_FRAME_BYTES];
      dc_frame g;
      round_trip(&f);
      dc_frame_encode(&f, b);
      assert_int_equal(dc_frame_decode(b, &g), DC_OK);
      assert_int_equal(g.kind, DC_FRAME_ABORT);
      assert_int_equal((dc_status)(int32_t)g.aux, all[i]);
      assert_int_equal(g.len, len);
    }
  }
}

/* Every single flipped bit is refused, for frames at both extremes. */
static void test_bit_flips_refused(void **state) {
  (void)state;
  dc_frame most = {.kind = UINT8_MAX,
                   .opcode = UINT8_MAX,
                   .dtype = UINT8_MAX,
                   .redop = UINT8_MAX,
                   .seq = UINT32_MAX,
                   .count = UINT64_MAX,
                   .len = UINT64_MAX,
                   .aux = UINT32_MAX};
  dc_frame abort_f = {
      .kind = DC_FRAME_ABORT, .len = 100, .aux = (uint32_t)DC_ERR_TIMEOUT};
  const dc_frame *frames[] = {&typical, &most, &abort_f};
  for (size_t k = 0; k < 3; k++) {
    unsigned char b[DC_FRAME_BYTES];
    dc_frame g;
    dc_frame_encode(frames[k], b);
    for (int bit = 0; bit < 8 * DC_FRAME_BYTES; bit++) {
      b[bit / 8] ^= (unsigned char)(1u << bit % 8);
      if (dc_frame_decode(b, &g) != DC_ERR_MISMATCH)
        fail_msg("frame %zu: flipping bit %d (byte %d) went unseen", k, bit,
                 bit / 8);
      b[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    assert_int_equal(dc_frame_decode(b, &g), DC_OK);
  }
}

/* Bytes that are not a frame: zeros, a wrong magic, text, a hello, and a
 * stream out of step (a frame read from any offset but its start). */
static void test_garbage_refused(void **state) {
  (void)state;
  unsigned char b[DC_FRAME_BYTES] = {0};
  dc_frame g;
  assert_int_equal(dc_frame_decode(b, &g), DC_ERR_MISMATCH);
  memset(b, 0xff, sizeof b);
  assert_int_equal(dc_frame_decode(b, &g), DC_ERR_MISMATCH);
  dc_frame_encode(&typical, b);
  b[0] = 'X'; /* magic only */
  assert_int_equal(dc_frame_decode(b, &g), DC_ERR_MISMATCH);
  dc_frame_encode(&typical, b);
  b[1] = 'C';
  b[0] = 'D'; /* magic byte-swapped: a big-endian writer */
  assert_int_equal(dc_frame_decode(b, &g), DC_ERR_MISMATCH);
  const char *http = "GET / HTTP/1.1\r\nHost: example\r\n\r\n";
  assert_int_equal(dc_frame_decode((const unsigned char *)http, &g),
                   DC_ERR_MISMATCH);
  dc_hello h = {.kind = DC_HELLO, .version = DC_WIRE_VERSION, .size = 2};
  unsigned char hb[DC_HELLO_BYTES];
  dc_hello_encode(&h, hb);
  assert_int_equal(dc_frame_decode(hb, &g), DC_ERR_MISMATCH);
  /* two frames back to back, with payloads of 0 and 5 bytes, read from
   * the wrong offset */
  for (int pay = 0; pay <= 5; pay += 5) {
    unsigned char s[2 * DC_FRAME_BYTES + 5];
    dc_frame f1 = typical, f2 = typical;
    f1.len = (uint64_t)pay;
    f2.seq++;
    dc_frame_encode(&f1, s);
    memset(s + DC_FRAME_BYTES, 'p', (size_t)pay);
    dc_frame_encode(&f2, s + DC_FRAME_BYTES + pay);
    for (int off = 1; off < DC_FRAME_BYTES + pay; off++)
      if (dc_frame_decode(s + off, &g) != DC_ERR_MISMATCH)
        fail_msg("payload %d: a frame read at offset %d decoded", pay, off);
    assert_int_equal(dc_frame_decode(s + DC_FRAME_BYTES + pay, &g), DC_OK);
    assert_int_equal(g.seq, typical.seq + 1);
  }
}

static void test_describe(void **state) {
  (void)state;
  char t[160];
  dc_frame_describe(&typical, t, sizeof t);
  assert_string_equal(t, "all_sum of 10 float32 (op #7)");
  static const struct {
    int op, redop;
    const char *name;
  } names[] = {
      {DC_OPC_ALL_REDUCE, DC_MAX, "all_max"},
      {DC_OPC_ALL_REDUCE, DC_MIN, "all_min"},
      {DC_OPC_ALL_REDUCE, DC_PROD, "all_prod"},
      {DC_OPC_ALL_REDUCE, 200, "all_reduce"},
      {DC_OPC_ALL_GATHER, 0, "all_gather"},
      {DC_OPC_REDUCE_SCATTER, 0, "reduce_scatter"},
      {DC_OPC_SEND, 0, "send"},
      {DC_OPC_BROADCAST, 0, "broadcast"},
      {DC_OPC_BARRIER, 0, "barrier"},
      {DC_OPC_SPLIT, 0, "split"},
      {DC_OPC_SETUP, 0, "set-up"},
      {DC_OPC_ALL_TO_ALL, 0, "all_to_all"},
      {DC_OPC_ALL_TO_ALLV, 0, "all_to_allv"},
      {DC_OPC_GATHER, 0, "gather"},
      {DC_OPC_SCATTER, 0, "scatter"},
      {DC_OPC_REDUCE_TO, 0, "reduce_to"},
      {9, 0, "unknown op"},
      {0, 0, "unknown op"},
      {255, 0, "unknown op"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    dc_frame f = typical;
    f.opcode = (uint8_t)names[i].op;
    f.redop = (uint8_t)names[i].redop;
    dc_frame_describe(&f, t, sizeof t);
    assert_non_null(strstr(t, names[i].name));
  }
  /* fields from a peer may be anything: no crash, a bounded text */
  dc_frame most = {.kind = UINT8_MAX,
                   .opcode = UINT8_MAX,
                   .dtype = UINT8_MAX,
                   .redop = UINT8_MAX,
                   .seq = UINT32_MAX,
                   .count = UINT64_MAX,
                   .len = UINT64_MAX,
                   .aux = UINT32_MAX};
  dc_frame_describe(&most, t, sizeof t);
  assert_string_equal(t, "unknown op of 18446744073709551615 invalid "
                         "(op #4294967295)");
  char small[12];
  dc_frame_describe(&most, small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
}

/* want vs got differing in one field: the text names both sides. */
static void diff_names(dc_frame got, const char *a, const char *b) {
  char t[256];
  dc_frame_diff(&typical, &got, t, sizeof t);
  if (!strstr(t, a) || !strstr(t, b) || strstr(t, a) > strstr(t, b))
    fail_msg("diff '%s' does not name '%s' (sent) then '%s' (expected)", t, a,
             b);
}

static void test_diff(void **state) {
  (void)state;
  char t[256];
  dc_frame got = typical;
  dc_frame_diff(&typical, &got, t, sizeof t);
  assert_string_equal(t, "");
  got.check = 1234; /* the check is not compared */
  dc_frame_diff(&typical, &got, t, sizeof t);
  assert_string_equal(t, "");

  got = typical;
  got.opcode = DC_OPC_ALL_GATHER;
  diff_names(got, "it sent all_gather", "expects all_sum");
  got = typical;
  got.redop = DC_MAX;
  diff_names(got, "all_max", "all_sum");
  got = typical;
  got.dtype = DC_INT8;
  diff_names(got, "10 int8", "10 float32");
  got = typical;
  got.count = 11;
  diff_names(got, "of 11 ", "of 10 ");
  got = typical;
  got.seq = 8;
  diff_names(got, "op #8", "op #7");

  /* broadcast: a different root is named as such */
  dc_frame want = typical;
  want.opcode = DC_OPC_BROADCAST;
  want.aux = 0;
  got = want;
  got.aux = 3;
  dc_frame_diff(&want, &got, t, sizeof t);
  assert_string_equal(t, "it sent broadcast from root 3, this rank expects "
                         "root 0");

  /* shared-memory set-up on one side only: DISTCOMM_SHM is named */
  want = typical;
  want.opcode = DC_OPC_SETUP;
  dc_frame_diff(&want, &typical, t, sizeof t);
  assert_non_null(strstr(t, "DISTCOMM_SHM"));
  dc_frame_diff(&typical, &want, t, sizeof t);
  assert_non_null(strstr(t, "DISTCOMM_SHM"));
  got = typical;
  got.count = 11;
  dc_frame_diff(&typical, &got, t, sizeof t);
  assert_null(strstr(t, "DISTCOMM_SHM"));

  /* len, and aux outside broadcast, are compared too: the text is not
   * empty, though it does not name them (both sides read alike) */
  got = typical;
  got.len = 44;
  dc_frame_diff(&typical, &got, t, sizeof t);
  assert_true(t[0] != '\0');
  got = typical;
  got.aux = 1;
  dc_frame_diff(&typical, &got, t, sizeof t);
  assert_true(t[0] != '\0');

  /* a short buffer: truncated, terminated */
  got = typical;
  got.count = 11;
  char small[16];
  dc_frame_diff(&typical, &got, small, sizeof small);
  assert_int_equal(strlen(small), sizeof small - 1);
}

/* Hello fields at the extremes of their wire widths (kind, version, lane
 * and reason or lanes travel in 16 bits, rank, size and flags in 32, job,
 * group and host in 64); test_auth.c covers typical values and corruption.
 * A refusal's field is its reason, any other hello's its lane count. */
static void test_hello_extremes(void **state) {
  (void)state;
  for (int hi = 0; hi < 2; hi++) {
    dc_hello h = {.kind = hi ? 0xffffu : 0,
                  .version = hi ? 0xffffu : 0,
                  .job = hi ? UINT64_MAX : 0,
                  .group = hi ? UINT64_MAX : 0,
                  .rank = hi ? UINT32_MAX : 0,
                  .size = hi ? UINT32_MAX : 0,
                  .lane = hi ? 0xffffu : 0,
                  .reason = hi ? 0x1234u : 0, /* not sent: not a refusal */
                  .lanes = hi ? 0xffffu : 0,
                  .host = hi ? UINT64_MAX : 0,
                  .flags = hi ? UINT32_MAX : 0};
    memset(h.nonce, hi ? 0xff : 0, DC_NONCE_BYTES);
    unsigned char b[DC_HELLO_BYTES];
    dc_hello g;
    dc_hello_encode(&h, b);
    assert_int_equal(dc_hello_decode(b, &g), DC_OK);
    assert_true(g.kind == h.kind && g.version == h.version && g.job == h.job &&
                g.group == h.group && g.rank == h.rank && g.size == h.size &&
                g.lane == h.lane && g.reason == 0 && g.lanes == h.lanes &&
                g.host == h.host && g.flags == h.flags);
    assert_memory_equal(g.nonce, h.nonce, DC_NONCE_BYTES);
    assert_memory_equal(b, "DCCM", 4);
    /* a hello is not a frame, whatever its fields */
    dc_frame f;
    assert_int_equal(dc_frame_decode(b, &f), DC_ERR_MISMATCH);
  }
  for (uint32_t x = 1; x <= 0xffffu; x += 0xfffeu) {
    dc_hello no = {.kind = DC_HELLO_REFUSED, .reason = x, .lanes = 7}, g;
    unsigned char nb[DC_HELLO_BYTES];
    dc_hello_encode(&no, nb);
    assert_int_equal(dc_hello_decode(nb, &g), DC_OK);
    assert_true(g.reason == x && g.lanes == 0);
  }
  /* a hello of another version is told apart from garbage by peek */
  dc_hello old = {.kind = DC_HELLO, .version = DC_WIRE_VERSION + 1};
  unsigned char b[DC_HELLO_BYTES];
  uint32_t v = 0;
  dc_hello_encode(&old, b);
  assert_int_equal(dc_hello_peek(b, sizeof b, &v), DC_ERR_MISMATCH);
  assert_int_equal(v, DC_WIRE_VERSION + 1);
  unsigned char f[DC_FRAME_BYTES];
  dc_frame_encode(&typical, f);
  for (size_t n = 1; n <= sizeof f; n++)
    assert_int_equal(dc_hello_peek(f, n, &v), DC_ERR_AUTH);
}

static void test_refusal_texts(void **state) {
  (void)state;
  const char *seen[16] = {0};
  for (uint32_t r = DC_REFUSE_VERSION; r <= DC_REFUSE_LANES; r++) {
    const char *t = dc_hello_reason_text(r);
    assert_non_null(t);
    assert_true(strlen(t) > 8);
    for (uint32_t q = DC_REFUSE_VERSION; q < r; q++)
      assert_true(strcmp(seen[q], t) != 0); /* each reason its own text */
    seen[r] = t;
  }
  assert_string_equal(dc_hello_reason_text(DC_REFUSE_NONE), "refused");
  assert_string_equal(dc_hello_reason_text(0xffff), "refused");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_round_trips),
      cmocka_unit_test(test_abort_frame),
      cmocka_unit_test(test_bit_flips_refused),
      cmocka_unit_test(test_garbage_refused),
      cmocka_unit_test(test_describe),
      cmocka_unit_test(test_diff),
      cmocka_unit_test(test_hello_extremes),
      cmocka_unit_test(test_refusal_texts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
