// A Q4_0 / Q4_K / Q5_K / Q6_K weight matrix (quant_matrix.cuh) times a few bf16
// activation rows: the decode-step product of a quantized model, reading each weight
// byte once and expanding it in registers (fp32 products and sums).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/quant_matrix.cuh"

namespace sy::cuda {

// Rows of x one kernel pass handles; larger products expand the weight to bf16 and use
// the cuBLASLt GEMM (kernels/cuda/linear.cuh).
inline constexpr int kQuantGemvMaxRows = 8;

struct QuantGemvArgs {
  QuantMatrix w;
  const __nv_bfloat16* x = nullptr;  // [m, w.k] rows, row r at x + r * w.k; 16-byte aligned
  int m = 0;                         // 1..kQuantGemvMaxRows
  // Exactly one output: y[r, j] at y + r * ldy + j for j < w.n (ldy >= w.n; 0: w.n), so
  // that the parts of a fused weight stored in different formats each write their
  // columns of one output. y = x · Wᵀ.
  float* y_f32 = nullptr;
  __nv_bfloat16* y_bf16 = nullptr;
  int64_t ldy = 0;
  // Warps per CTA of 16 weight rows, splitting k: 8 (0 means 8) or 16. 8 is what runs
  // in the engine (measured on the H200); 16 is a bench arm for matrices of few rows
  // (switchyard-gemv-bench's ".w16" rows), where 8 leave SMs short of loads in flight.
  int warps = 0;
};

cudaError_t quant_gemv(const QuantGemvArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
