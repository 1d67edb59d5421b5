#include "worker/model/convert.h"

#include <cmath>
#include <cstring>

#include "common/half.h"
#include "worker/model/quants.h"

namespace sy {

void to_f32(DType dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t blk = 0; blk < n / kQ8_0BlockSize; ++blk) {
        const float d = f16_to_f32(b[blk].d);
        for (int j = 0; j < kQ8_0BlockSize; ++j) dst[blk * kQ8_0BlockSize + j] = d * static_cast<float>(b[blk].qs[j]);
      }
      return;
    }
    case DType::kQ4_0: dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n); return;
    case DType::kQ4_K: dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n); return;
    case DType::kQ5_K: dequantize_row_q5_k(static_cast<const BlockQ5_K*>(src), dst, n); return;
    case DType::kQ6_K: dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n); return;
  }
}

void quantize_q8_0(const float* src, BlockQ8_0* dst, int64_t n) {
  for (int64_t blk = 0; blk < n / kQ8_0BlockSize; ++blk) {
    const float* x = src + blk * kQ8_0BlockSize;
    float amax = 0;
    for (int j = 0; j < kQ8_0BlockSize; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    dst[blk].d = f32_to_f16(d);
    for (int j = 0; j < kQ8_0BlockSize; ++j) dst[blk].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
  }
}

}  // namespace sy
