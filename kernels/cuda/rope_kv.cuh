// RoPE fused with the KV cache write: one launch rotates the step's query heads in place
// and stores its rotated keys and its values at their positions in the paged cache
// (what rope() over the Q and K heads followed by write_kv_cache() does in two). A
// decode step's rows are tiny, so the two launches and their dependency were most of
// those ops' time.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cpu/rope.h"
#include "kernels/cuda/attention.cuh"

namespace sy::cuda {

struct RopeKvArgs {
  // The cache, block table, rows and positions as for write_kv_cache: kv.q (query heads,
  // rotated in place through q), kv.k_new / kv.v_new (read only: the rotated keys go to
  // the cache, the row in kv.k_new keeps its unrotated values).
  PagedAttentionArgs kv;
  __nv_bfloat16* q = nullptr;  // == kv.q, writable
  int rot_dim = 0;             // leading dims of each head that rotate, even, ≤ head_dim
  cpu::RopeLayout layout = cpu::RopeLayout::kRotateHalf;
  const float* inv_freq = nullptr;  // [rot_dim / 2] device
};

// Same angles and rounding as rope() (one bf16 rounding of each rotated value).
cudaError_t rope_write_kv(const RopeKvArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
