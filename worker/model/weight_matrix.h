// A linear layer's weight matrix [rows, cols] as the CPU backend computes with it: one
// or more row slices (kernels/cpu/linear.h), each either a view of a tensor in the
// mapped model file, in its stored type, or float32 rows this matrix owns (a type the
// kernels do not take, a column slice off the quantization blocks, or the float32
// reference path). Q/K/V and gate/up stay separate tensors in the file and become
// slices of one matrix: no copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/linear.h"

namespace sy {

struct WeightMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<cpu::WeightSlice> slices;  // rows stacked in y_col0 order
  std::vector<std::unique_ptr<float[]>> owned;  // the float32 slices' rows

  bool empty() const { return rows == 0; }
  // The whole matrix as float32 rows [rows, cols] when it is one owned float32 slice
  // (the float32 path), else null.
  const float* f32() const {
    return slices.size() == 1 && slices[0].type == DType::kF32 && !owned.empty()
               ? reinterpret_cast<const float*>(slices[0].data)
               : nullptr;
  }
  // Bytes a product reads: its slices' rows (views and owned alike).
  size_t bytes() const {
    size_t b = 0;
    for (const cpu::WeightSlice& s : slices) b += dtype_bytes(s.type, cols).value_or(0) * static_cast<size_t>(s.n);
    return b;
  }
};

}  // namespace sy
