// Merging partial attention states on the GPU (decode context parallelism, DESIGN.md
// "Parallel groups"): attention of the same query rows over disjoint key sets, each part
// with its bf16 output and its natural-log log-sum-exp (PagedAttentionArgs::lse), merged
// as if attention had run over the union: lse = log Σ_p e^(lse_p), out = Σ_p
// e^(lse_p − lse) · out_p, parts added in index order. kernels/cpu/attention_merge.h is
// the reference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

constexpr int kMaxMergeParts = 16;

struct MergeStatesArgs {
  // Part p: outs[p] [rows, heads, head_dim] bf16 and lses[p] [rows, heads] fp32; a part
  // with lse −inf saw no key and weighs nothing.
  const __nv_bfloat16* outs[kMaxMergeParts] = {};
  const float* lses[kMaxMergeParts] = {};
  int num_parts = 0;
  __nv_bfloat16* out = nullptr;  // [rows, heads, head_dim]; may be outs[p] (each element is read first)
  float* lse = nullptr;          // [rows, heads], optional
  int64_t rows = 0;
  int heads = 0;
  int head_dim = 0;  // ≤ 1024
};

cudaError_t merge_attention_states(const MergeStatesArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
