// Per-head RMSNorm of queries and keys (qwen3), in place on a fused bf16 QKV row.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct QkNormArgs {
  // Row t: n_q_heads query heads at x + t * row_stride, then n_kv_heads key heads; each
  // head of head_dim values is normalized over itself and scaled by its weight.
  __nv_bfloat16* x = nullptr;
  int64_t tokens = 0;
  int64_t row_stride = 0;
  int n_q_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  const float* q_weight = nullptr;  // [head_dim] device
  const float* k_weight = nullptr;  // [head_dim] device
  float eps = 1e-6f;
};

cudaError_t qk_norm(const QkNormArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
