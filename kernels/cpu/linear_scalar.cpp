// linear()'s portable kernels (linear_kernels.h): the level every processor has, and
// the one a build for another architecture runs. They perform linear.h's sequence with
// std::fma, so they give the SIMD kernels' bits.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/half.h"
#include "kernels/cpu/linear_kernels.h"

namespace sy::cpu::detail {
namespace {

struct F32 {
  static float get(const uint8_t* row, int64_t i) {
    float v;
    std::memcpy(&v, row + i * 4, 4);
    return v;
  }
};
struct F16 {
  static float get(const uint8_t* row, int64_t i) {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return f16_to_f32(h);
  }
};
struct BF16 {
  static float get(const uint8_t* row, int64_t i) {
    uint16_t h;
    std::memcpy(&h, row + i * 2, 2);
    return bf16_to_f32(h);
  }
};

inline float sum_lanes(const float* l) { return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); }

template <class W>
void float_rows(const float* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
                int64_t ldy) {
  for (int64_t j = 0; j < cols; ++j) {
    const uint8_t* row = w + static_cast<size_t>(j) * ws;
    for (int r = 0; r < rows; ++r) {
      const float* a = x + r * ldx;
      float lane[8] = {};
      for (int64_t i0 = 0; i0 < k; i0 += 8)
        for (int l = 0; l < 8; ++l) {
          const int64_t i = i0 + l;
          lane[l] = std::fma(i < k ? a[i] : 0.0f, i < k ? W::get(row, i) : 0.0f, lane[l]);
        }
      y[r * ldy + j] = sum_lanes(lane);
    }
  }
}

// The int8 value i of a weight block and its scale.
struct Q8_0 {
  using Block = BlockQ8_0;
  static int32_t q(const Block& b, int i) { return b.qs[i]; }
};
struct Q4_0 {
  using Block = BlockQ4_0;
  static int32_t q(const Block& b, int i) { return (i < 16 ? b.qs[i] & 0x0f : b.qs[i - 16] >> 4) - 8; }
};

template <class WB>
void q_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
            int64_t ldy) {
  const int64_t nb = k / kQ8_0BlockSize;
  for (int64_t j = 0; j < cols; ++j) {
    const auto* blocks = reinterpret_cast<const typename WB::Block*>(w + static_cast<size_t>(j) * ws);
    for (int r = 0; r < rows; ++r) {
      const XBlockQ8* xb = x + r * ldx;
      float lane[8] = {};
      for (int64_t b = 0; b < nb; ++b) {
        const float scale = xb[b].d * f16_to_f32(blocks[b].d);
        for (int l = 0; l < 8; ++l) {  // lane l: the exact sum of products 4l..4l+3
          int32_t dot = 0;
          for (int i = 4 * l; i < 4 * l + 4; ++i) dot += WB::q(blocks[b], i) * int32_t{xb[b].qs[i]};
          lane[l] = std::fma(scale, static_cast<float>(dot), lane[l]);
        }
      }
      y[r * ldy + j] = sum_lanes(lane);
    }
  }
}

template <class Blk>
void k4_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
               int64_t ldy) {
  const int64_t nsb = k / kQKBlockSize;
  for (int64_t j = 0; j < cols; ++j) {
    const auto* blocks = reinterpret_cast<const Blk*>(w + static_cast<size_t>(j) * ws);
    for (int r = 0; r < rows; ++r) {
      float lane[8] = {}, mins = 0.0f;
      for (int64_t s = 0; s < nsb; ++s) {
        const Blk& blk = blocks[s];
        const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
        uint8_t sc[8], mn[8];
        unpack_q4_k_scales(blk.scales, sc, mn);
        for (int sub = 0; sub < 8; ++sub) {  // sub-block 2p in the low nibbles of bytes 32p.., 2p+1 in the high
          const XBlockQ8& xb = x[r * ldx + s * 8 + sub];
          const uint8_t* q = blk.qs + 32 * (sub / 2);
          const float scale = xb.d * (d * static_cast<float>(sc[sub]));
          for (int l = 0; l < 8; ++l) {
            int32_t dot = 0;
            for (int i = 4 * l; i < 4 * l + 4; ++i) {
              int qi = sub % 2 ? q[i] >> 4 : q[i] & 0x0f;
              if constexpr (std::is_same_v<Blk, BlockQ5_K>) qi |= ((blk.qh[i] >> sub) & 1) << 4;
              dot += qi * int32_t{xb.qs[i]};
            }
            lane[l] = std::fma(scale, static_cast<float>(dot), lane[l]);
          }
          mins = std::fma(dmin * static_cast<float>(mn[sub]), xb.dsum, mins);
        }
      }
      y[r * ldy + j] = sum_lanes(lane) - mins;
    }
  }
}

void q6_k_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
               int64_t ldy) {
  const int64_t nsb = k / kQKBlockSize;
  for (int64_t j = 0; j < cols; ++j) {
    const auto* blocks = reinterpret_cast<const BlockQ6_K*>(w + static_cast<size_t>(j) * ws);
    for (int r = 0; r < rows; ++r) {
      float lane[8] = {};
      for (int64_t s = 0; s < nsb; ++s) {
        const BlockQ6_K& blk = blocks[s];
        const float d = f16_to_f32(blk.d);
        for (int half = 0; half < 2; ++half)
          for (int g = 0; g < 4; ++g) {
            const XBlockQ8& xb = x[r * ldx + s * 8 + half * 4 + g];
            const uint8_t* ql = blk.ql + 64 * half + 32 * (g % 2);
            const uint8_t* qh = blk.qh + 32 * half;
            const int8_t* sc = blk.scales + 8 * half + 2 * g;
            const float sa = xb.d * (d * static_cast<float>(sc[0])), sb = xb.d * (d * static_cast<float>(sc[1]));
            for (int l = 0; l < 8; ++l) {
              int32_t dot = 0;
              for (int i = 4 * l; i < 4 * l + 4; ++i) {
                const int q = ((g < 2 ? ql[i] : ql[i] >> 4) & 0x0f) | (((qh[i] >> (2 * g)) & 3) << 4);
                dot += (q - 32) * int32_t{xb.qs[i]};
              }
              lane[l] = std::fma(l < 4 ? sa : sb, static_cast<float>(dot), lane[l]);
            }
          }
      }
      y[r * ldy + j] = sum_lanes(lane);
    }
  }
}

const LinearKernels kKernels = {float_rows<F32>, float_rows<F16>, float_rows<BF16>, q_rows<Q8_0>,
                                q_rows<Q4_0>,    k4_rows<BlockQ4_K>, k4_rows<BlockQ5_K>, q6_k_rows};

}  // namespace

const LinearKernels* linear_kernels_scalar() { return &kKernels; }

}  // namespace sy::cpu::detail
