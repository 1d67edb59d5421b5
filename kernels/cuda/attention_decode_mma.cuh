// The tensor-core decode kernel (attention_decode_mma.cu), launched by
// paged_decode_attention (attention_decode.cu) for GQA groups >= 2 and head_dim >= 16.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/attention.cuh"

namespace sy::cuda::attn {

// Most splits of one (sequence, kv head) a decode call takes.
inline constexpr int kMaxDecodeSplits = 64;

// Launches the decode kernel only; with num_splits > 1 it leaves each split's normalized
// output in part_o [seq][split][head][head_dim] and its base-2 log-sum-exp in part_lse
// [seq][split][head] for the merge. head_dim 16, 64 or 128; arguments already checked.
cudaError_t launch_decode_mma(const PagedAttentionArgs& a, int num_splits, float* part_o, float* part_lse,
                              cudaStream_t stream);

}  // namespace sy::cuda::attn
