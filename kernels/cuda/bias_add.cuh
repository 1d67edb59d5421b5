// Adds a per-column fp32 bias to bf16 rows in place (qwen2's Q/K/V bias on the fused
// QKV GEMM output).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct BiasAddArgs {
  __nv_bfloat16* x = nullptr;  // row r at x + r * row_stride, cols values
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  const float* bias = nullptr;  // [cols] device
};

cudaError_t bias_add(const BiasAddArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
