// Q8_0 weights (GGUF's 8-bit format: per 32 values one fp16 scale) times a few bf16
// activation rows: the decode-step product of a Q8_0 model, reading each weight byte
// once. The device layout splits GGUF's 34-byte blocks into a quant matrix and a scale
// matrix, so that every load is 16 bytes and aligned.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

inline constexpr int kQ8_0Block = 32;
// Rows of x one kernel pass handles; larger products dequantize to bf16 and use the
// cuBLASLt GEMM (kernels/cuda/linear.cuh).
inline constexpr int kQ8_0GemvMaxRows = 8;

// A Q8_0 weight matrix [n, k] (k % 32 == 0) on the device: W[r][c] = scale[r][c / 32] ·
// quants[r][c].
struct Q8_0Matrix {
  const int8_t* quants = nullptr;  // [n, k]
  const __half* scales = nullptr;  // [n, k / 32]
  int64_t n = 0;
  int64_t k = 0;
};

struct Q8_0GemvArgs {
  Q8_0Matrix w;
  const __nv_bfloat16* x = nullptr;  // [m, w.k] rows, row r at x + r * w.k
  int m = 0;                         // 1..kQ8_0GemvMaxRows
  // Exactly one output, [m, w.n]: y = x · Wᵀ with fp32 accumulation.
  float* y_f32 = nullptr;
  __nv_bfloat16* y_bf16 = nullptr;
};

cudaError_t q8_0_gemv(const Q8_0GemvArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
