/* Encoding of hellos and frame headers: fixed little-endian layouts, so a
 * receiver never trusts a length it has not checked. */
#include <stdio.h>
#include <string.h>

#include "transport/frame.h"

#define HELLO_MAGIC 0x4d434344u /* "DCCM" */
#define PROOF_MAGIC 0x46504344u /* "DCPF" */

/* Fixed little-endian fields: plain loads and stores on little-endian
 * hosts (the latency path encodes and checks two headers per message). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE16(x) __builtin_bswap16(x)
#define LE32(x) __builtin_bswap32(x)
#define LE64(x) __builtin_bswap64(x)
#else
#define LE16(x) (x)
#define LE32(x) (x)
#define LE64(x) (x)
#endif

void dc_put16(unsigned char *p, uint32_t v) {
  uint16_t x = LE16((uint16_t)v);
  memcpy(p, &x, sizeof x);
}
void dc_put32(unsigned char *p, uint32_t v) {
  v = LE32(v);
  memcpy(p, &v, sizeof v);
}
void dc_put64(unsigned char *p, uint64_t v) {
  v = LE64(v);
  memcpy(p, &v, sizeof v);
}
uint32_t dc_get16(const unsigned char *p) {
  uint16_t x;
  memcpy(&x, p, sizeof x);
  return LE16(x);
}
uint32_t dc_get32(const unsigned char *p) {
  uint32_t x;
  memcpy(&x, p, sizeof x);
  return LE32(x);
}
uint64_t dc_get64(const unsigned char *p) {
  uint64_t x;
  memcpy(&x, p, sizeof x);
  return LE64(x);
}

/* A cheap mix of the header words: catches a stream that is out of step.
 * Word-wise with independent multiplies, so it costs a few cycles on the
 * latency path. n is a multiple of 4. */
static uint32_t header_check(const unsigned char *p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; i += 4)
    h ^= (dc_get32(p + i) + i) * 0xBF58476D1CE4E5B9ull;
  return (uint32_t)(h ^ h >> 29 ^ h >> 47);
}

void dc_frame_encode(const dc_frame *f, unsigned char out[DC_FRAME_BYTES]) {
  dc_put16(out, DC_WIRE_MAGIC);
  out[2] = f->kind;
  out[3] = f->opcode;
  out[4] = f->dtype;
  out[5] = f->redop;
  dc_put16(out + 6, 0);
  dc_put32(out + 8, f->seq);
  dc_put64(out + 12, f->count);
  dc_put64(out + 20, f->len);
  dc_put32(out + 28, f->aux);
  /* the check replaces nothing: it is folded into the magic's spare bits */
  uint32_t c = header_check(out, DC_FRAME_BYTES);
  dc_put16(out + 6, c & 0xffffu);
}

dc_status dc_frame_decode(const unsigned char in[DC_FRAME_BYTES], dc_frame *f) {
  unsigned char tmp[DC_FRAME_BYTES];
  memcpy(tmp, in, sizeof tmp);
  dc_put16(tmp + 6, 0);
  if (dc_get16(in) != DC_WIRE_MAGIC ||
      dc_get16(in + 6) != (header_check(tmp, sizeof tmp) & 0xffffu))
    return DC_ERR_MISMATCH;
  f->kind = in[2];
  f->opcode = in[3];
  f->dtype = in[4];
  f->redop = in[5];
  f->seq = dc_get32(in + 8);
  f->count = dc_get64(in + 12);
  f->len = dc_get64(in + 20);
  f->aux = dc_get32(in + 28);
  f->check = dc_get16(in + 6);
  return DC_OK;
}

static const char *opcode_name(unsigned op, unsigned redop) {
  static const char *reduce[] = {"all_sum", "all_max", "all_min", "all_prod"};
  switch (op) {
  case DC_OPC_ALL_REDUCE:
    return redop < 4 ? reduce[redop] : "all_reduce";
  case DC_OPC_ALL_GATHER:
    return "all_gather";
  case DC_OPC_REDUCE_SCATTER:
    return "reduce_scatter";
  case DC_OPC_SEND:
    return "send";
  case DC_OPC_BROADCAST:
    return "broadcast";
  case DC_OPC_BARRIER:
    return "barrier";
  case DC_OPC_SPLIT:
    return "split";
  case DC_OPC_SETUP:
    return "set-up";
  case DC_OPC_ALL_TO_ALL:
    return "all_to_all";
  case DC_OPC_ALL_TO_ALLV:
    return "all_to_allv";
  case DC_OPC_GATHER:
    return "gather";
  case DC_OPC_SCATTER:
    return "scatter";
  case DC_OPC_REDUCE_TO:
    return "reduce_to";
  }
  return "unknown op";
}

void dc_frame_describe(const dc_frame *f, char *out, size_t n) {
  snprintf(out, n, "%s of %llu %s (op #%u)", opcode_name(f->opcode, f->redop),
           (unsigned long long)f->count, dc_dtype_name((dc_dtype)f->dtype),
           (unsigned)f->seq);
}

void dc_frame_diff(const dc_frame *want, const dc_frame *got, char *out,
                   size_t n) {
  out[0] = '\0';
  if (got->opcode != want->opcode || got->redop != want->redop ||
      got->dtype != want->dtype || got->count != want->count ||
      got->seq != want->seq || got->aux != want->aux || got->len != want->len) {
    char a[96], b[96];
    dc_frame_describe(got, a, sizeof a);
    dc_frame_describe(want, b, sizeof b);
    int only_len = got->opcode == want->opcode && got->redop == want->redop &&
                   got->dtype == want->dtype && got->count == want->count &&
                   got->seq == want->seq && got->aux == want->aux;
    if (only_len) /* all_to_allv's blocks: its frames carry count 0 */
      snprintf(out, n,
               "in %s it sent a block of %llu bytes, this rank "
               "expects %llu",
               b, (unsigned long long)got->len, (unsigned long long)want->len);
    else if (got->opcode == DC_OPC_BROADCAST && got->aux != want->aux)
      snprintf(out, n,
               "it sent broadcast from root %u, this rank expects root %u",
               (unsigned)got->aux, (unsigned)want->aux);
    else if (got->aux != want->aux && got->opcode == want->opcode &&
             got->redop == want->redop && got->dtype == want->dtype &&
             got->count == want->count && got->seq == want->seq)
      snprintf(out, n,
               "in %s it runs another algorithm (aux %u, this rank %u): "
               "is DISTCOMM_DIRECT_RANKS the same on every rank?",
               b, (unsigned)got->aux, (unsigned)want->aux);
    else if ((got->opcode == DC_OPC_SETUP) != (want->opcode == DC_OPC_SETUP))
      snprintf(out, n,
               "it sent %s, this rank expects %s: only one of the two sets "
               "up shared memory (is DISTCOMM_SHM the same on every rank?)",
               a, b);
    else
      snprintf(out, n, "it sent %s, this rank expects %s", a, b);
  }
}

void dc_hello_encode(const dc_hello *h, unsigned char out[DC_HELLO_BYTES]) {
  dc_put32(out, HELLO_MAGIC);
  dc_put16(out + 4, h->kind);
  dc_put16(out + 6, h->version);
  dc_put64(out + 8, h->job);
  dc_put64(out + 16, h->group);
  dc_put32(out + 24, h->rank);
  dc_put32(out + 28, h->size);
  dc_put16(out + 32, h->lane);
  dc_put16(out + 34, h->kind == DC_HELLO_REFUSED ? h->reason : h->lanes);
  dc_put64(out + 36, h->host);
  dc_put32(out + 44, h->flags);
  memcpy(out + 48, h->nonce, DC_NONCE_BYTES);
  dc_put32(out + 80, header_check(out, 80));
}

dc_status dc_hello_decode(const unsigned char in[DC_HELLO_BYTES], dc_hello *h) {
  if (dc_get32(in) != HELLO_MAGIC || dc_get32(in + 80) != header_check(in, 80))
    return DC_ERR_AUTH;
  h->kind = dc_get16(in + 4);
  h->version = dc_get16(in + 6);
  h->job = dc_get64(in + 8);
  h->group = dc_get64(in + 16);
  h->rank = dc_get32(in + 24);
  h->size = dc_get32(in + 28);
  h->lane = dc_get16(in + 32);
  h->reason = h->lanes = 0;
  *(h->kind == DC_HELLO_REFUSED ? &h->reason : &h->lanes) = dc_get16(in + 34);
  h->host = dc_get64(in + 36);
  h->flags = dc_get32(in + 44);
  memcpy(h->nonce, in + 48, DC_NONCE_BYTES);
  return DC_OK;
}

dc_status dc_hello_peek(const unsigned char *in, size_t n, uint32_t *version) {
  static const unsigned char magic[4] = {'D', 'C', 'C', 'M'};
  if (memcmp(in, magic, n < 4 ? n : 4) != 0)
    return DC_ERR_AUTH;
  if (n < 8)
    return DC_OK;
  *version = dc_get16(in + 6);
  return *version == DC_WIRE_VERSION ? DC_OK : DC_ERR_MISMATCH;
}

const char *dc_hello_reason_text(uint32_t reason) {
  switch (reason) {
  case DC_REFUSE_VERSION:
    return "protocol version differs";
  case DC_REFUSE_JOB:
    return "it belongs to another job or group";
  case DC_REFUSE_SIZE:
    return "world size differs (are both ranks using the same hostfile?)";
  case DC_REFUSE_RANK:
    return "rank or connection number unexpected or duplicated";
  case DC_REFUSE_AUTH:
    return "peer did not prove the job token: the connecting rank has no "
           "DISTCOMM_JOB_TOKEN, the accepting rank has one (start every rank "
           "through distcomm-launch, or none)";
  case DC_REFUSE_NO_TOKEN:
    return "the connecting rank has a DISTCOMM_JOB_TOKEN, the accepting rank "
           "has none (start every rank through distcomm-launch, or none)";
  case DC_REFUSE_SOURCE:
    return "the job has no token, so it lets in only this host's processes "
           "of this user, and the kernel says this connection is not one "
           "(for a job across hosts, give every rank DISTCOMM_JOB_TOKEN or "
           "DISTCOMM_JOB_TOKEN_FILE, or start it with distcomm-launch)";
  case DC_REFUSE_SECURE:
    return "DISTCOMM_SECURE differs between the two ranks (authenticated "
           "frames on one, not on the other): set it alike on every rank";
  case DC_REFUSE_LANES:
    return "the two ranks make a different number of connections per pair: "
           "set DISTCOMM_SOCKETS alike on every rank (or on none), and give "
           "every rank the same hostfile";
  }
  return "refused";
}

void dc_proof_encode(const unsigned char mac[32],
                     unsigned char out[DC_PROOF_BYTES]) {
  dc_put32(out, PROOF_MAGIC);
  dc_put16(out + 4, DC_WIRE_VERSION);
  dc_put16(out + 6, 0);
  memcpy(out + 8, mac, 32);
}

dc_status dc_proof_decode(const unsigned char in[DC_PROOF_BYTES],
                          unsigned char mac[32]) {
  if (dc_get32(in) != PROOF_MAGIC || dc_get16(in + 4) != DC_WIRE_VERSION ||
      dc_get16(in + 6) != 0)
    return DC_ERR_AUTH;
  memcpy(mac, in + 8, 32);
  return DC_OK;
}

void dc_escape_text(const char *in, size_t n, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 <= cap; i++) {
    unsigned char c = (unsigned char)in[i];
    if (c >= 0x20 && c < 0x7f && c != '\\')
      out[o++] = (char)c;
    else
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
  }
  if (cap)
    out[o < cap ? o : cap - 1] = '\0';
}
