/* What travels on a connection.
 *
 * Every connection opens with a hello from the connecting side and a reply
 * from the accepting side; both name the job, the group, the ranks and the
 * world size, so that strangers and misconfigured peers are refused.
 * After that, every message is a 32-byte frame header and its payload. The
 * header carries what the sender is doing (op, dtype, count, sequence
 * number), which the receiver compares with what it expects, so ranks that
 * disagree fail with DC_ERR_MISMATCH instead of corrupting memory. An ABORT
 * frame carries a failure to the peers so that they stop waiting. */
#ifndef DC_TRANSPORT_FRAME_H
#define DC_TRANSPORT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

#define DC_WIRE_MAGIC 0x4443u /* "DC" */
#define DC_WIRE_VERSION 3u    /* 2: a nonce, job-token proofs; 3: lane count */
#define DC_FRAME_BYTES 32
#define DC_HELLO_BYTES 84
#define DC_PROOF_BYTES 40
#define DC_NONCE_BYTES 32
#define DC_ABORT_TEXT_MAX 480

enum dc_frame_kind { DC_FRAME_DATA = 1, DC_FRAME_ABORT = 2 };

/* Operation codes carried in frames (names used in mismatch messages). */
enum dc_opcode {
  DC_OPC_ALL_REDUCE = 1,
  DC_OPC_ALL_GATHER,
  DC_OPC_REDUCE_SCATTER,
  DC_OPC_SEND,
  DC_OPC_BROADCAST,
  DC_OPC_BARRIER,
  DC_OPC_SPLIT,
  DC_OPC_SETUP, /* shared-memory set-up inside init and split */
  DC_OPC_ALL_TO_ALL = 16,
  DC_OPC_ALL_TO_ALLV,
  DC_OPC_GATHER,
  DC_OPC_SCATTER,
  DC_OPC_REDUCE_TO,
};

typedef struct dc_frame {
  uint8_t kind, opcode, dtype, redop;
  uint32_t seq;   /* collective number, or per-pair counter for send/recv */
  uint64_t count; /* the op's element count as the caller gave it */
  uint64_t len;   /* payload bytes that follow */
  uint32_t aux;   /* root for broadcast, status for abort */
  uint32_t check; /* guards the header itself */
} dc_frame;

void dc_frame_encode(const dc_frame *f, unsigned char out[DC_FRAME_BYTES]);
/* DC_ERR_MISMATCH when the bytes are not a frame (bad magic or check). */
dc_status dc_frame_decode(const unsigned char in[DC_FRAME_BYTES], dc_frame *f);
/* "all_sum of 10 float32" style description, for mismatch messages. */
void dc_frame_describe(const dc_frame *f, char *out, size_t n);
/* Empty string when got matches want, else what differs. */
/* A peer's text (an abort's reason) made safe to print: bytes outside
 * printable ASCII become \xNN, so no terminal escape reaches stderr or a
 * Python exception. out always ends in a NUL. */
/* Little-endian fields of the wire formats (frames, hellos, the
 * coordinator's messages): p holds at least the field's bytes. */
void dc_put16(unsigned char *p, uint32_t v);
void dc_put32(unsigned char *p, uint32_t v);
void dc_put64(unsigned char *p, uint64_t v);
uint32_t dc_get16(const unsigned char *p);
uint32_t dc_get32(const unsigned char *p);
uint64_t dc_get64(const unsigned char *p);

void dc_escape_text(const char *in, size_t n, char *out, size_t cap);

void dc_frame_diff(const dc_frame *want, const dc_frame *got, char *out,
                   size_t n);

/* The handshake (src/transport/dial.c, accept.c):
 *   connector -> acceptor  HELLO with the connector's nonce
 *   acceptor -> connector  HELLO_OK with its nonce (or HELLO_REFUSED, reason)
 * and, when the job has a token (transport/auth.h), two proofs:
 *   acceptor -> connector  PROOF right after HELLO_OK
 *   connector -> acceptor  PROOF once it has checked the acceptor's */
enum dc_hello_kind { DC_HELLO = 1, DC_HELLO_OK = 2, DC_HELLO_REFUSED = 3 };
enum dc_hello_flags {
  DC_HELLO_TOKEN = 1,  /* the sender will prove a token */
  DC_HELLO_SECURE = 2, /* DISTCOMM_SECURE: its frames carry a MAC */
};

typedef struct dc_hello {
  uint32_t kind; /* dc_hello_kind */
  uint32_t version;
  uint64_t job;   /* DISTCOMM_JOB_ID, or a hash of the hostfile */
  uint64_t group; /* group id (world or split) */
  uint32_t rank, size, lane;
  /* A refusal carries why (dc_hello_reason); a hello or OK its sender's
   * connections per pair (DISTCOMM_SOCKETS x addresses), so a difference
   * is refused at once, naming the variable: both share one wire field. */
  uint32_t reason, lanes;
  uint64_t host;  /* dc_host_key() of the sender: same host, shared memory */
  uint32_t flags; /* dc_hello_flags */
  unsigned char nonce[DC_NONCE_BYTES]; /* zeros without a token */
} dc_hello;

enum dc_hello_reason {
  DC_REFUSE_NONE = 0,
  DC_REFUSE_VERSION,
  DC_REFUSE_JOB,
  DC_REFUSE_SIZE,
  DC_REFUSE_RANK,
  DC_REFUSE_AUTH,     /* this rank has a token, the peer offered none */
  DC_REFUSE_NO_TOKEN, /* the peer has a token, this rank has none */
  DC_REFUSE_SOURCE,   /* no token, and the peer's address is not the rank's */
  DC_REFUSE_SECURE,   /* DISTCOMM_SECURE differs between the two */
  DC_REFUSE_LANES,    /* connections per pair differ (DISTCOMM_SOCKETS) */
};

void dc_hello_encode(const dc_hello *h, unsigned char out[DC_HELLO_BYTES]);
/* DC_ERR_AUTH when the bytes are not a hello (bad magic or check). */
dc_status dc_hello_decode(const unsigned char in[DC_HELLO_BYTES], dc_hello *h);
/* Judge the first n bytes of what may be a hello (n may be short of
 * DC_HELLO_BYTES; bytes past n are not read): DC_OK while they can still
 * be one of this version, DC_ERR_AUTH when they cannot be a hello at all,
 * DC_ERR_MISMATCH with *version set when it is another protocol version.
 * Lets an acceptor drop garbage without waiting for a whole hello. */
dc_status dc_hello_peek(const unsigned char *in, size_t n, uint32_t *version);
const char *dc_hello_reason_text(uint32_t reason);

/* A job-token proof: magic, version, the MAC (DC_AUTH_PROOF_BYTES). */
void dc_proof_encode(const unsigned char mac[32],
                     unsigned char out[DC_PROOF_BYTES]);
/* DC_ERR_AUTH when the bytes are not a proof message. */
dc_status dc_proof_decode(const unsigned char in[DC_PROOF_BYTES],
                          unsigned char mac[32]);

#endif
