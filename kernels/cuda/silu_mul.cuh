// The gated activation of the feed-forward block on bf16 rows: out = silu(gate) · up,
// where gate and up are the two halves of one fused GEMM's output row.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct SiluMulArgs {
  const __nv_bfloat16* gate_up = nullptr;  // [rows, 2n]: gate in [0, n), up in [n, 2n)
  __nv_bfloat16* out = nullptr;            // [rows, n]
  int64_t rows = 0;
  int64_t n = 0;
};

cudaError_t silu_mul(const SiluMulArgs& a, cudaStream_t stream);

#ifdef __CUDACC__
// silu(g) · u in fp32, as silu_mul computes it.
__device__ __forceinline__ float silu_times(float g, float u) {
  return g / (1.0f + expf(-g)) * u;
}
#endif

}  // namespace sy::cuda
