/* Writes the binary seed corpora of the fuzz targets with the real encoders:
 *   fuzz_make_seeds DIR   writes DIR/hello/ and DIR/frame/
 * (the committed corpus/ was made this way; hostfile seeds are plain text).
 * Valid messages and edge cases: other versions, refusals, a proof after a
 * hello, truncated and bit-flipped copies, a frame where a hello belongs. */
#include <stdio.h>
#include <string.h>

#include "transport/frame.h"

static int put(const char *dir, const char *sub, const char *name,
               const void *p, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n) {
    perror(path);
    return 1;
  }
  return fclose(f) != 0;
}

static dc_hello base(void) {
  dc_hello h = {.kind = DC_HELLO,
                .version = DC_WIRE_VERSION,
                .job = 0x5eed,
                .group = 1,
                .rank = 1,
                .size = 2,
                .lane = 0,
                .lanes = 2,
                .host = 0x1122334455667788ull,
                .flags = DC_HELLO_TOKEN};
  for (int i = 0; i < DC_NONCE_BYTES; i++)
    h.nonce[i] = (unsigned char)(i * 37 + 11);
  return h;
}

static int hellos(const char *dir) {
  unsigned char b[DC_HELLO_BYTES + DC_PROOF_BYTES], mac[32];
  int bad = 0;
  dc_hello h = base();
  memset(mac, 0x5a, sizeof mac);
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "hello_token", b, DC_HELLO_BYTES);
  bad |= put(dir, "hello", "hello_short", b, 20);
  h.flags |= DC_HELLO_SECURE; /* DISTCOMM_SECURE */
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "hello_secure", b, DC_HELLO_BYTES);
  h.kind = DC_HELLO_REFUSED;
  h.reason = DC_REFUSE_SECURE;
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "refused_secure", b, DC_HELLO_BYTES);
  h = base();
  dc_hello_encode(&h, b);
  dc_proof_encode(mac, b + DC_HELLO_BYTES);
  bad |= put(dir, "hello", "hello_and_proof", b, sizeof b);
  h.flags = 0;
  memset(h.nonce, 0, sizeof h.nonce);
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "hello_no_token", b, DC_HELLO_BYTES);
  h.kind = DC_HELLO_REFUSED;
  h.reason = DC_REFUSE_AUTH;
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "refused_auth", b, DC_HELLO_BYTES);
  h = base();
  h.kind = DC_HELLO_OK;
  h.rank = 0;
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "ok_and_proof", b, sizeof b);
  h.version = 1;
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "version_1", b, DC_HELLO_BYTES);
  h = base();
  h.rank = h.size = h.lane = 0xffffffffu;
  h.job = ~0ull;
  dc_hello_encode(&h, b);
  bad |= put(dir, "hello", "all_ones", b, DC_HELLO_BYTES);
  dc_hello_encode(&h, b);
  b[50] ^= 1; /* the check no longer fits */
  bad |= put(dir, "hello", "bad_check", b, DC_HELLO_BYTES);
  bad |= put(dir, "hello", "http", "GET / HTTP/1.0\r\n\r\n", 18);
  bad |= put(dir, "hello", "magic_only", "DCCM", 4);
  dc_frame f = {.kind = DC_FRAME_DATA, .len = 1ull << 62};
  dc_frame_encode(&f, b);
  bad |= put(dir, "hello", "frame_instead", b, DC_FRAME_BYTES);
  return bad;
}

static int frames(const char *dir) {
  unsigned char b[DC_FRAME_BYTES];
  int bad = 0;
  static const dc_frame fs[] = {
      {.kind = DC_FRAME_DATA,
       .opcode = DC_OPC_ALL_REDUCE,
       .dtype = 10,
       .count = 10,
       .len = 40},
      {.kind = DC_FRAME_DATA,
       .opcode = DC_OPC_ALL_GATHER,
       .dtype = 0,
       .count = 1,
       .len = 1,
       .seq = 7},
      {.kind = DC_FRAME_DATA,
       .opcode = DC_OPC_BROADCAST,
       .dtype = 4,
       .count = 3,
       .len = 24,
       .aux = 1},
      {.kind = DC_FRAME_DATA,
       .opcode = DC_OPC_SEND,
       .dtype = 13,
       .count = 1ull << 40,
       .len = 1ull << 43},
      {.kind = DC_FRAME_ABORT,
       .opcode = DC_OPC_BARRIER,
       .len = 480,
       .aux = (uint32_t)-5},
      {.kind = DC_FRAME_DATA, .opcode = DC_OPC_SETUP, .dtype = 5, .len = 96},
      {.kind = 255,
       .opcode = 255,
       .dtype = 255,
       .redop = 255,
       .seq = 0xffffffffu,
       .count = ~0ull,
       .len = ~0ull,
       .aux = ~0u},
      {.kind = DC_FRAME_DATA,
       .opcode = DC_OPC_ALL_REDUCE,
       .dtype = 99,
       .redop = 9,
       .count = 1,
       .len = 1},
      {0},
  };
  for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
    char name[32];
    dc_frame_encode(&fs[i], b);
    snprintf(name, sizeof name, "frame_%zu", i);
    bad |= put(dir, "frame", name, b, sizeof b);
  }
  dc_frame_encode(&fs[0], b);
  b[9] ^= 0x80; /* the check no longer fits */
  bad |= put(dir, "frame", "bad_check", b, sizeof b);
  bad |= put(dir, "frame", "short", b, 16);
  memset(b, 0, sizeof b);
  bad |= put(dir, "frame", "zeros", b, sizeof b);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_make_seeds DIR (with DIR/hello, DIR/frame)\n");
    return 2;
  }
  return hellos(argv[1]) | frames(argv[1]);
}
