// Rotary position embedding in place on bf16 rows, in either stored layout (the same
// pairs and angles as kernels/cpu/rope.h: angle = float(position) · inv_freq[i], a
// float32 product, with inv_freq computed on the host by cpu::rope_inv_freq).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/rope.h"

namespace sy::cuda {

struct RopeArgs {
  // Row t's heads start at x + t * row_stride, head h at + h * head_dim. Q and K heads
  // sit side by side in a fused QKV row, so one call with n_heads = q + kv heads
  // rotates both.
  __nv_bfloat16* x = nullptr;
  int64_t tokens = 0;
  int64_t row_stride = 0;
  int n_heads = 0;
  int head_dim = 0;
  int rot_dim = 0;  // leading dims of each head that rotate, even, ≤ head_dim
  cpu::RopeLayout layout = cpu::RopeLayout::kRotateHalf;
  const int32_t* positions = nullptr;  // [tokens] device
  const float* inv_freq = nullptr;     // [rot_dim / 2] device
};

cudaError_t rope(const RopeArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
