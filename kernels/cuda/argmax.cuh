// Greedy choice on the GPU: the index of each row's largest logit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sy::cuda {

struct ArgmaxArgs {
  const float* logits = nullptr;  // [rows, vocab] fp32 (rows row_stride apart)
  int64_t rows = 0;
  int vocab = 0;
  int32_t* out = nullptr;  // [rows]
  // Variant 0 (default): several blocks per row, the last to finish reduces the blocks'
  // candidates (one launch); needs `workspace` of argmax_workspace_bytes(rows) bytes (or
  // of more rows: calls of any row count may share one), zero before the first call;
  // every call leaves its rows' counters zero. Variant 1: one block per row (no
  // workspace).
  int variant = 0;
  void* workspace = nullptr;
  // Variant 0 only: the distance between rows (0: vocab), and, for one shard of a
  // vocabulary split over tensor-parallel ranks, the shard's first index (added to the
  // indices) and `keys`: each row's best (value, index) as one comparable 64-bit key,
  // written instead of `out` (which may then be null), for argmax_merge_keys.
  int64_t row_stride = 0;
  int index_offset = 0;
  unsigned long long* keys = nullptr;
};

// Workspace of variant 0 for up to `rows` rows.
size_t argmax_workspace_bytes(int64_t rows);

// The first index of the maximum on ties, as torch.argmax and the CPU sampler choose.
// NaN logits are never chosen (a row of only NaN gives 0).
cudaError_t argmax(const ArgmaxArgs& a, cudaStream_t stream);

// out[r] = the index of the best of keys[s · rows + r] over the `shards` shards' keys
// (ArgmaxArgs::keys; the first index of the maximum on ties, as argmax over the whole row;
// 0 where every shard's row was NaN).
cudaError_t argmax_merge_keys(const unsigned long long* keys, int shards, int64_t rows, int32_t* out,
                              cudaStream_t stream);

}  // namespace sy::cuda
