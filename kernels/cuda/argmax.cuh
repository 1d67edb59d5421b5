// Greedy choice on the GPU: the index of each row's largest logit.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sy::cuda {

struct ArgmaxArgs {
  const float* logits = nullptr;  // [rows, vocab] fp32
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
};

// Workspace of variant 0 for up to `rows` rows.
size_t argmax_workspace_bytes(int64_t rows);

// The first index of the maximum on ties, as torch.argmax and the CPU sampler choose.
// NaN logits are never chosen (a row of only NaN gives 0).
cudaError_t argmax(const ArgmaxArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
