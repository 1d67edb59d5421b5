// The Hopper prefill kernel (attention_prefill_wgmma.cu), launched by
// paged_prefill_attention (attention_prefill.cu) when a.prefill_kernel == 1 and
// head_dim == 128.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/attention.cuh"

namespace sy::cuda::attn {

// Launches the warpgroup-MMA prefill kernel: same semantics as the mma.sync one.
// head_dim 128; arguments already checked. cudaErrorNotSupported where the build holds
// no sm_90a code (90 not among CMAKE_CUDA_ARCHITECTURES) or the device is not compute
// capability 9.0, the only one sm_90a code runs on.
cudaError_t launch_prefill_wgmma(const PagedAttentionArgs& a, int max_q_len, cudaStream_t stream);

}  // namespace sy::cuda::attn
