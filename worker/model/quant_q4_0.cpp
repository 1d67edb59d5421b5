// Q4_0: blocks of 32 values, an f16 scale and 4-bit quants, x = (q - 8) * d.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/model/quants.h"

namespace sy {

void dequantize_row_q4_0(const BlockQ4_0* src, float* dst, int64_t n) {
  constexpr int kHalf = kQ4_0BlockSize / 2;
  for (int64_t b = 0; b < n / kQ4_0BlockSize; ++b) {
    const float d = f16_to_f32(src[b].d);
    float* y = dst + b * kQ4_0BlockSize;
    // Byte j holds element j in its low nibble and element j + 16 in its high one.
    for (int j = 0; j < kHalf; ++j) {
      y[j] = static_cast<float>((src[b].qs[j] & 0xF) - 8) * d;
      y[j + kHalf] = static_cast<float>((src[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void quantize_row_q4_0(const float* src, BlockQ4_0* dst, int64_t n) {
  constexpr int kHalf = kQ4_0BlockSize / 2;
  for (int64_t b = 0; b < n / kQ4_0BlockSize; ++b) {
    const float* x = src + b * kQ4_0BlockSize;
    // The signed value of largest magnitude maps to q = 0 (x = -8 d): the 16 levels
    // -8..7 are asymmetric, and putting the extreme on the long side keeps it exact.
    float extreme = 0;
    for (int j = 0; j < kQ4_0BlockSize; ++j)
      if (std::fabs(x[j]) > std::fabs(extreme)) extreme = x[j];
    const float d = extreme / -8.0f;
    const float inv = d != 0 ? 1.0f / d : 0.0f;
    dst[b].d = f32_to_f16(d);
    auto level = [&](float v) {
      // v * inv is in [-8, 8]; + 8.5 then truncation rounds to nearest (half up).
      const int q = static_cast<int>(std::floor(v * inv + 8.5f));
      return static_cast<uint8_t>(std::clamp(q, 0, 15));
    };
    for (int j = 0; j < kHalf; ++j) dst[b].qs[j] = static_cast<uint8_t>(level(x[j]) | (level(x[j + kHalf]) << 4));
  }
}

}  // namespace sy
