/* Which reduction a user op is: MLX reduces float16 and bfloat16 with
 * MPI_Op_create'd functions (sum, max, min) over a 2-byte type that does
 * not say which of the two it is. We call the function on probe values and
 * compare with distcomm's kernels' answers under both readings, so the
 * reduction itself runs at native speed instead of through the callback. */
#include <string.h>

#include "face.h"

#define PROBE_N 4

/* Values whose sums, maxima and minima differ under both readings:
 * float16 1, -2, 0.5, 3 and 2, 1, -0.5, 5 (as bfloat16: tiny, -2, tiny,
 * 32 and 2, tiny, -tiny, 2048). */
static const unsigned short probe_in[PROBE_N] = {0x3C00, 0xC000, 0x3800,
                                                 0x4200};
static const unsigned short probe_acc[PROBE_N] = {0x4000, 0x3C00, 0xB800,
                                                  0x4500};

int dc_face_recognise(MPI_User_function *fn, int *dtype, int *op) {
  /* Room for PROBE_N elements of 8 bytes: a complex64 function reads as
   * many as it is told, whatever the data. */
  unsigned char in[64] = {0}, got[64] = {0};
  static face_type two = {FACE_RAW, 2};
  MPI_Datatype t = &two;
  int n = PROBE_N;
  memcpy(in, probe_in, sizeof probe_in);
  memcpy(got, probe_acc, sizeof probe_acc);
  fn(in, got, &n, &t);
  static const int dtypes[] = {DC_FLOAT16, DC_BFLOAT16};
  static const int ops[] = {DC_SUM, DC_MAX, DC_MIN};
  for (size_t d = 0; d < 2; d++)
    for (size_t o = 0; o < 3; o++) {
      unsigned short want[PROBE_N];
      memcpy(want, probe_acc, sizeof want);
      if (dc_reduce_local(want, probe_in, PROBE_N, dtypes[d], ops[o]) != DC_OK)
        continue;
      if (memcmp(want, got, sizeof want) == 0 &&
          memcmp(got + sizeof want, (unsigned char[8]){0}, 8) == 0) {
        *dtype = dtypes[d];
        *op = ops[o];
        return 0;
      }
    }
  return -1;
}
