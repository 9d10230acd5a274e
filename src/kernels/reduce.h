/* Reduction kernels and element conversions (src/kernels/reduce.c). */
#ifndef DC_KERNELS_REDUCE_H
#define DC_KERNELS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "distcomm.h"

/* DC_OK when (dtype, op) can be reduced; DC_ERR_NOT_SUPPORTED for max/min
 * of complex64; DC_ERR_INVALID for values out of range. */
dc_status dc_reduce_check(dc_dtype dtype, dc_op op);

/* inout[i] = inout[i] op in[i]. No argument checks: call dc_reduce_check()
 * first. inout and in may be unaligned; they must not overlap unless equal.
 * The result is the same whichever operand is first (NaN wins for max/min),
 * but for a sum or product of two NaNs, which keeps the first's payload (as
 * the hardware does): where two ranks compute one element they must pass
 * the operands in one order (algo/doubling.c, algo/pull.c) to hold the same
 * bits. Vectorised; hot path. */
void dc_reduce(void *inout, const void *in, size_t count, dc_dtype dtype,
               dc_op op);

/* IEEE binary16 and bfloat16 <-> float32, round to nearest even. */
float dc_half_to_float(uint16_t h);
uint16_t dc_float_to_half(float f);
float dc_bf16_to_float(uint16_t b);
uint16_t dc_float_to_bf16(float f);

#endif
