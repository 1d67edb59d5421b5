// Row gather from a bf16 table: the token embedding lookup (into the fp32 residual
// stream) and the selection of the rows whose logits are wanted (bf16 to bf16).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace sy::cuda {

struct GatherRowsArgs {
  const __nv_bfloat16* table = nullptr;  // [table_rows, cols]
  int64_t table_rows = 0;
  int64_t cols = 0;
  const int32_t* ids = nullptr;  // [rows] device; each in [0, table_rows)
  int64_t rows = 0;
  // A slice: the table holds rows [row0, row0 + table_rows) of a larger one, ids index
  // the larger one, and an id outside the slice writes a row of zeros (a vocabulary-
  // parallel rank's part of the embedding; the ranks' rows are then summed).
  int64_t row0 = 0;
  bool slice = false;
  // Exactly one output, [rows, cols] row-major.
  float* out_f32 = nullptr;
  __nv_bfloat16* out_bf16 = nullptr;
};

// out[r] = table[ids[r] - row0]. An id outside the table writes a row of NaN (the caller
// validates ids; this keeps a bad one visible instead of reading out of bounds), or of
// zeros for a slice.
cudaError_t gather_rows(const GatherRowsArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
