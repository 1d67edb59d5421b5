// Conversion of stored weight formats to float32 on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace sy {

// Converts n elements of `src` (stored as `dtype`) to float32. n must fill whole blocks:
// a multiple of 32 for Q8_0 and Q4_0, of 256 for the K-quants (worker/model/quants.h).
void to_f32(DType dtype, const void* src, float* dst, int64_t n);

// Quantizes n floats (n % 32 == 0) to Q8_0 blocks as ggml does: per block of 32,
// d = max|x| / 127, q = round(x / d).
void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n);

}  // namespace sy
