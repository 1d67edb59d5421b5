// A quantized weight (Q8_0, or Q4_0 / Q4_K / Q5_K / Q6_K as a QuantMatrix) times up to
// 64 bf16 activation rows: the decode steps of batches past the GEMVs' 8 rows. Each
// weight byte is read once and expanded to bf16 in registers (as the GEMVs do, with
// the same rounding), then multiplied on tensor cores (fp32 sums) against the
// activations, which CTAs stage through shared memory. Where the weight has too few
// rows to fill the GPU, CTAs split k and write fp32 partial sums to a workspace that a
// second kernel adds up in a fixed order.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/q8_0_gemv.cuh"
#include "kernels/cuda/quant_matrix.cuh"

namespace sy::cuda {

inline constexpr int kQuantGemmMaxRows = 64;

struct QuantGemmArgs {
  QuantMatrix w;                     // the weight, unless q8_0.quants is set
  Q8_0Matrix q8_0;                   // a Q8_0 weight (quants 16-byte aligned)
  const __nv_bfloat16* x = nullptr;  // [m, k] rows, 16-byte aligned
  int m = 0;                         // 1..kQuantGemmMaxRows
  // Exactly one output: y[r, j] at y + r * ldy + j for j < n (ldy >= n; 0: n).
  float* y_f32 = nullptr;
  __nv_bfloat16* y_bf16 = nullptr;
  int64_t ldy = 0;
  // Split-k partial sums; null or too small for `splits` means no split.
  float* workspace = nullptr;
  size_t workspace_bytes = 0;
  int splits = 0;  // CTAs along k; 0 chooses enough to fill the GPU's SMs twice
};

// Workspace bytes that let quant_gemm split k `splits` ways for m rows of n outputs.
inline size_t quant_gemm_workspace_bytes(int64_t n, int m, int splits) {
  return static_cast<size_t>(n) * static_cast<size_t>(m) * static_cast<size_t>(splits) * sizeof(float);
}

cudaError_t quant_gemm(const QuantGemmArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
