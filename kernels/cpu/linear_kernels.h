// The per-level kernels behind linear() (linear.h): one table per SIMD level, each
// defined in a file compiled for that level (linear_avx2.cpp, linear_avx512.cpp,
// linear_avx512_vnni.cpp; linear_scalar.cpp for any x86-64 or other processor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/cpu/linear.h"

namespace sy::cpu::detail {

// A block of 32 values of x quantized to int8 for Q8_0 products: x ≈ d · qs.
struct XBlockQ8 {
  float d;
  int8_t qs[32];
  float dsum;  // d · Σ qs: the K-quants' block minimums multiply it
};

// The 6-bit scales and minimums of a Q4_K (or Q5_K) block's 8 sub-blocks, from its 12 packed bytes
// (bytes 0-3: scales 0-3, 4-7: mins 0-3, each with two high bits of scale/min 4-7;
// 8-11: the low nibbles of scales and mins 4-7).
inline void unpack_q4_k_scales(const uint8_t p[12], uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = p[j] & 63;
    mn[j] = p[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((p[j + 8] & 0x0f) | ((p[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4));
  }
}

// Value i (0..255) of a Q6_K block as stored, q in 0..63 (x = d · scales[i / 16] · (q − 32)):
// its low 4 bits from ql, its high 2 from qh.
inline int q6_k_q(const BlockQ6_K& b, int i) {
  const int half = i / 128, g = (i % 128) / 32, l = i % 32;
  const uint8_t lq = b.ql[64 * half + 32 * (g % 2) + l], hq = b.qh[32 * half + l];
  return ((g < 2 ? lq : lq >> 4) & 0x0f) | (((hq >> (2 * g)) & 3) << 4);
}

// Rows of x a kernel call takes at most: the weights it loads serve them all
// (LinearKernels::int8_rows may allow more for the block types).
inline constexpr int kLinearRows = 4;

// y[r * ldy + j] = x_r · w_j for r < rows (1..kLinearRows), j < cols; weight row j at
// w + j * ws bytes, k values each.
using FloatRowsKernel = void (*)(const float* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols,
                                 int64_t k, float* y, int64_t ldy);
// The same for Q8_0 or Q4_0 weights and x quantized per block (k / 32 blocks a row, ldx blocks
// between rows).
using Q8RowsKernel = void (*)(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols,
                              int64_t k, float* y, int64_t ldy);

struct LinearKernels {
  FloatRowsKernel f32 = nullptr;
  FloatRowsKernel f16 = nullptr;
  FloatRowsKernel bf16 = nullptr;
  Q8RowsKernel q8_0 = nullptr;
  Q8RowsKernel q4_0 = nullptr;
  Q8RowsKernel q4_k = nullptr;  // k % 256 == 0
  Q8RowsKernel q5_k = nullptr;  // k % 256 == 0
  Q8RowsKernel q6_k = nullptr;  // k % 256 == 0
  int int8_rows = kLinearRows;  // rows of x the block-type kernels take per call
};

// Each returns null where the build lacks that level's file; `prefetch`: the tiles that
// load the next tile's weight rows ahead (LinearOptions::prefetch) or those that do not.
const LinearKernels* linear_kernels_scalar();
const LinearKernels* linear_kernels_avx2(bool prefetch);
const LinearKernels* linear_kernels_avx512(bool prefetch);
const LinearKernels* linear_kernels_avx512_vnni(bool prefetch);

// The AMX paths' shared parts. Both multiply 2 × 2 tiles of kAmxTile rows of x by
// kAmxTile weight columns: 32 rows against a panel of kAmxPanel columns per pass. The tile
// configuration's memory layout (palette 1): tile t has rows[t] rows of colsb[t] bytes.
inline constexpr int kAmxTile = 16;
inline constexpr int kAmxPanel = 2 * kAmxTile;
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
// Their output: four float tiles c[t] (t = 2 · row half + column half) of rows
// [r0, r0 + kAmxPanel) and a panel's columns, into y where row < m and column < cols.
void store_tiles(const float (*c)[kAmxTile * kAmxTile], int64_t r0, int64_t m, int64_t cols, float* y, int64_t ldy);
// Their work split: fn(slice, j0, cols) for every panel of `panel` weight columns of
// every slice (cols < panel at a slice's end), spread over the pool.
void for_each_panel(std::span<const WeightSlice> w, int64_t panel, ThreadPool& pool,
                    const std::function<void(const WeightSlice&, int64_t j0, int64_t cols)>& fn);

// AMX (linear_amx.cpp; where the build is not x86-64, amx_usable() is false and this is
// never called): y[i, s.y_col0 + j] = x_i · W_s[j] for block-type slices, rows i < m of x quantized;
// xq holds m rounded up to a multiple of 32 rows, those past m zero.
void linear_amx(const XBlockQ8* xq, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                ThreadPool& pool);

// AMX-BF16 (linear_amx_bf16.cpp; never called where amx_usable() is false): the same for
// bf16 slices, k % 32 == 0; xb holds x rounded to bf16 (row stride k), m rounded up to a
// multiple of 32 rows, those past m zero.
void linear_amx_bf16(const uint16_t* xb, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                     ThreadPool& pool);

// x quantized for Q8_0 and Q4_0 products, the same for every level: per block of 32,
// d = max|x| / 127, qs = round-to-nearest-even(x / d) (0 for an all-zero block).
void quantize_x_q8(const float* x, XBlockQ8* out, int64_t k);

}  // namespace sy::cpu::detail
