// The per-level kernels behind linear() (linear.h): one table per SIMD level, each
// defined in a file compiled for that level (linear_avx2.cpp, linear_avx512.cpp,
// linear_avx512_vnni.cpp; linear_scalar.cpp for any x86-64 or other processor).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/linear.h"

namespace sy::cpu::detail {

// A block of 32 values of x quantized to int8 for Q8_0 products: x ≈ d · qs.
struct XBlockQ8 {
  float d;
  int8_t qs[32];
};

// Rows of x a kernel call takes at most: the weights it loads serve them all.
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
};

// Each returns null where the build lacks that level's file.
const LinearKernels* linear_kernels_scalar();
const LinearKernels* linear_kernels_avx2();
const LinearKernels* linear_kernels_avx512();
const LinearKernels* linear_kernels_avx512_vnni();

// x quantized for Q8_0 and Q4_0 products, the same for every level: per block of 32,
// d = max|x| / 127, qs = round-to-nearest-even(x / d) (0 for an all-zero block).
void quantize_x_q8(const float* x, XBlockQ8* out, int64_t k);

}  // namespace sy::cpu::detail
