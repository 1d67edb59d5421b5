// BF16 weights times a few bf16 activation rows: the decode-step product at small
// batch, where cuBLASLt's GEMM tiles leave memory bandwidth unused. Each weight byte is
// read once, with 16-byte streaming loads several deep per thread; the activations are
// small and stay in L1/L2.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

// Rows of x one kernel handles (compile-time variants 1..8).
inline constexpr int kGemvBf16MaxRows = 8;

struct GemvBf16Args {
  const __nv_bfloat16* w = nullptr;  // [n, k] row-major, 16-byte aligned
  int64_t n = 0;
  int64_t k = 0;                     // multiple of 8
  const __nv_bfloat16* x = nullptr;  // [m, k] row-major, 16-byte aligned
  int m = 0;                         // 1..kGemvBf16MaxRows
  // Exactly one output, [m, n]: y = x · wᵀ with fp32 accumulation.
  float* y_f32 = nullptr;
  __nv_bfloat16* y_bf16 = nullptr;
  // Warps per weight row: 1, or 2 or 4 for one row, each warp a segment
  // of k (k a multiple of 8 · split) and the segments' sums added in order.
  int split = 1;
};

// Whether gemv_bf16 takes this shape and these pointers (else it returns an error).
bool gemv_bf16_supports(const __nv_bfloat16* w, int64_t n, int64_t k, const __nv_bfloat16* x,
                        int m);

cudaError_t gemv_bf16(const GemvBf16Args& a, cudaStream_t stream);

}  // namespace sy::cuda
