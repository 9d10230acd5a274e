/* libFuzzer target: the frame header decoder (src/transport/frame.c) and
 * the mismatch messages built from a decoded header, whose fields (op,
 * dtype, reduction) come from the peer and may be anything. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < DC_FRAME_BYTES)
    return 0;
  unsigned char *in = malloc(DC_FRAME_BYTES); /* exact size: ASan guards it */
  if (!in)
    abort();
  memcpy(in, data, DC_FRAME_BYTES);
  dc_frame f;
  if (dc_frame_decode(in, &f) == DC_OK) {
    unsigned char out[DC_FRAME_BYTES];
    dc_frame_encode(&f, out);
    if (memcmp(in, out, sizeof out) != 0)
      abort(); /* a decoded header must encode back to the same bytes */
    char text[160], diff[400];
    dc_frame want = {.kind = DC_FRAME_DATA,
                     .opcode = DC_OPC_ALL_REDUCE,
                     .dtype = DC_FLOAT32,
                     .count = 10,
                     .len = 40};
    dc_frame_describe(&f, text, sizeof text);
    dc_frame_diff(&want, &f, diff, sizeof diff);
    if (!memchr(text, '\0', sizeof text) || !memchr(diff, '\0', sizeof diff))
      abort();
  }
  free(in);
  return 0;
}
