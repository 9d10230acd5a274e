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
#define DC_WIRE_VERSION 1u
#define DC_FRAME_BYTES 32
#define DC_HELLO_BYTES 48
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
dc_status dc_frame_decode(const unsigned char in[DC_FRAME_BYTES],
                          dc_frame *f);
/* "all_sum of 10 float32" style description, for mismatch messages. */
void dc_frame_describe(const dc_frame *f, char *out, size_t n);
/* Empty string when got matches want, else what differs. */
void dc_frame_diff(const dc_frame *want, const dc_frame *got, char *out,
                   size_t n);

enum dc_hello_kind { DC_HELLO = 1, DC_HELLO_OK = 2, DC_HELLO_REFUSED = 3 };

typedef struct dc_hello {
  uint32_t kind;     /* dc_hello_kind */
  uint32_t version;
  uint64_t job;      /* DISTCOMM_JOB_ID, or a hash of the hostfile */
  uint64_t group;    /* group id (world or split) */
  uint32_t rank, size, lane, reason; /* reason: why refused (dc_hello_reason) */
  uint64_t host;     /* dc_host_key() of the sender: same host, shared memory */
} dc_hello;

enum dc_hello_reason {
  DC_REFUSE_NONE = 0,
  DC_REFUSE_VERSION,
  DC_REFUSE_JOB,
  DC_REFUSE_SIZE,
  DC_REFUSE_RANK,
};

void dc_hello_encode(const dc_hello *h, unsigned char out[DC_HELLO_BYTES]);
dc_status dc_hello_decode(const unsigned char in[DC_HELLO_BYTES],
                          dc_hello *h);
const char *dc_hello_reason_text(uint32_t reason);

#endif
