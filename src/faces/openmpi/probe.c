/* Which reduction a user op is: MLX reduces float16 and bfloat16 with
 * MPI_Op_create'd functions (sum, max, min) over a 2-byte type that does
 * not say which of the two it is. We call the function on probe values and
 * compare with distcomm's kernels' answers under both readings, so the
 * reduction itself runs at native speed instead of through the callback. */
#include <string.h>

#include "face.h"

#define PROBE_N 4

/* Values whose sums, maxima and minima differ from each other (and sums
 * between the readings):
 * float16 1, -2, 0.5, 3 and 2, 1, -0.5, 5 (as bfloat16: tiny, -2, tiny,
 * 32 and 2, tiny, -tiny, 2048). */
static const unsigned short probe_in[PROBE_N] = {0x3C00, 0xC000, 0x3800,
                                                 0x4200};
static const unsigned short probe_acc[PROBE_N] = {0x4000, 0x3C00, 0xB800,
                                                  0x4500};

/* fn on n probe elements; *got holds the accumulator's result. */
static void call(MPI_User_function *fn, const unsigned short *in,
                 const unsigned short *acc, int n, unsigned char got[64]) {
  /* Room for PROBE_N elements of 8 bytes: a complex64 function reads as
   * many as it is told, whatever the data. */
  unsigned char inb[64] = {0};
  static face_type two = {FACE_RAW, 2};
  MPI_Datatype t = &two;
  memset(got, 0, 64);
  memcpy(inb, in, (size_t)n * 2);
  memcpy(got, acc, (size_t)n * 2);
  fn(inb, got, &n, &t);
}

/* Max and min of either format pick the same bits on numbers (both order
 * like sign-magnitude integers); only a float16 NaN (a number in bfloat16)
 * tells them apart. Pairs (acc, in): (1, NaN), (NaN, 1) in float16. A
 * float16 function as MLX writes it (std::max/std::min: keep acc unless
 * in compares greater/less) keeps acc on both for max, and 1 for min only
 * on the first; a bfloat16 one picks the larger/smaller number. */
static int which_16(MPI_User_function *fn, int op) {
  static const unsigned short acc[2] = {0x3C00, 0x7E00},
                              in[2] = {0x7E00, 0x3C00};
  static const unsigned short f16[2][2] = {{0x3C00, 0x7E00}, {0x3C00, 0x7E00}};
  static const unsigned short bf16[2][2] = {{0x7E00, 0x7E00}, {0x3C00, 0x3C00}};
  unsigned char got[64];
  call(fn, in, acc, 2, got);
  int k = op == DC_MAX ? 0 : 1;
  if (memcmp(got, f16[k], 4) == 0)
    return DC_FLOAT16;
  if (memcmp(got, bf16[k], 4) == 0)
    return DC_BFLOAT16;
  return -1;
}

int dc_face_recognise(MPI_User_function *fn, int *dtype, int *op) {
  unsigned char got[64];
  call(fn, probe_in, probe_acc, PROBE_N, got);
  static const int dtypes[] = {DC_FLOAT16, DC_BFLOAT16};
  static const int ops[] = {DC_SUM, DC_MAX, DC_MIN};
  int found = 0;
  for (size_t d = 0; d < 2; d++)
    for (size_t o = 0; o < 3; o++) {
      unsigned short want[PROBE_N];
      memcpy(want, probe_acc, sizeof want);
      if (dc_reduce_local(want, probe_in, PROBE_N, dtypes[d], ops[o]) !=
              DC_OK ||
          memcmp(want, got, sizeof want) != 0 ||
          memcmp(got + sizeof want, (unsigned char[8]){0}, 8) != 0)
        continue;
      *dtype = dtypes[d];
      *op = ops[o];
      found++;
    }
  if (found == 2 && *op != DC_SUM) /* max or min: which format? */
    *dtype = which_16(fn, *op);
  return found >= 1 && *dtype >= 0 && (found == 1 || *op != DC_SUM) ? 0 : -1;
}
