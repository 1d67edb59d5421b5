#include "kernels/cpu/rope.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace sy::cpu {

namespace {
float round_bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&f, &b, 4);
  return f;
}
}  // namespace

std::vector<float> rope_inv_freq(int rot_dim, float theta, const std::vector<float>& factors, bool round_to_bf16) {
  std::vector<float> inv(static_cast<size_t>(rot_dim / 2));
  for (int i = 0; i < rot_dim / 2; ++i) {
    const float expo = static_cast<float>(2 * i) / static_cast<float>(rot_dim);
    float f = 1.0f / std::pow(theta, expo);
    if (!factors.empty()) f /= factors[static_cast<size_t>(i)];
    inv[static_cast<size_t>(i)] = round_to_bf16 ? round_bf16(f) : f;
  }
  return inv;
}

void rope(float* x, int64_t tokens, int64_t row_stride, int n_heads, const int32_t* positions, const RopeParams& p) {
  const int half = p.rot_dim / 2;
  std::vector<float> cos_v(static_cast<size_t>(half)), sin_v(static_cast<size_t>(half));
  for (int64_t t = 0; t < tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (int i = 0; i < half; ++i) {
      const float angle = pos * p.inv_freq[static_cast<size_t>(i)];  // float32 product, as transformers
      cos_v[static_cast<size_t>(i)] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin_v[static_cast<size_t>(i)] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + t * row_stride + static_cast<int64_t>(h) * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const int a = p.layout == RopeLayout::kRotateHalf ? i : 2 * i;
        const int b = p.layout == RopeLayout::kRotateHalf ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        const float c = cos_v[static_cast<size_t>(i)], s = sin_v[static_cast<size_t>(i)];
        v[a] = x0 * c - x1 * s;
        v[b] = x1 * c + x0 * s;
      }
    }
  }
}

}  // namespace sy::cpu
