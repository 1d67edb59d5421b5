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

void rope_angles(const int32_t* positions, int64_t tokens, const RopeParams& p, float* cos, float* sin) {
  const int half = p.rot_dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float pos = static_cast<float>(positions[t]);
    for (int i = 0; i < half; ++i) {
      const float angle = pos * p.inv_freq[static_cast<size_t>(i)];  // float32 product, as transformers
      cos[t * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin[t * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
}

void rope(float* x, int64_t tokens, int64_t row_stride, int n_heads, const float* cos, const float* sin, const RopeParams& p) {
  const int half = p.rot_dim / 2;
  const bool rotate_half = p.layout == RopeLayout::kRotateHalf;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* cos_t = cos + t * half;
    const float* sin_t = sin + t * half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + t * row_stride + static_cast<int64_t>(h) * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const int a = rotate_half ? i : 2 * i;
        const int b = rotate_half ? i + half : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cos_t[i] - x1 * sin_t[i];
        v[b] = x1 * cos_t[i] + x0 * sin_t[i];
      }
    }
  }
}

void rope(float* x, int64_t tokens, int64_t row_stride, int n_heads, const int32_t* positions, const RopeParams& p) {
  const auto half = static_cast<size_t>(p.rot_dim / 2);
  std::vector<float> cos_v(half), sin_v(half);
  for (int64_t t = 0; t < tokens; ++t) {
    rope_angles(positions + t, 1, p, cos_v.data(), sin_v.data());
    rope(x + t * row_stride, 1, row_stride, n_heads, cos_v.data(), sin_v.data(), p);
  }
}

}  // namespace sy::cpu
