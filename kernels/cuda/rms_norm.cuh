// RMSNorm fused with the residual add that closes the previous sub-block: the residual
// stream stays fp32, the normalized rows come out in bf16 for the next GEMM.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct AddRmsNormArgs {
  float* residual = nullptr;      // [rows, n] fp32; residual += delta, in place
  const float* delta = nullptr;   // [rows, n] fp32, or nullptr: no add (the first layer)
  const float* weight = nullptr;  // [n] fp32
  __nv_bfloat16* out = nullptr;   // [rows, n]: rmsnorm(residual) * weight
  int64_t rows = 0;
  int n = 0;
  float eps = 1e-6f;
};

cudaError_t add_rms_norm(const AddRmsNormArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
