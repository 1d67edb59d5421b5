// Which part of a stored weight tensor a rank loads: a range of its rows (a tensor-
// parallel rank's heads or FFN rows, or one tensor of a fused Q/K/V or gate/up matrix)
// and a range of its columns (a rank's share of the O and down projections' inputs).
// Shared by the CPU weight loader and the CUDA uploader.
#pragma once

#include <cstdint>

#include "worker/model/weights.h"

namespace sy {

// Rows [row0, row0 + take) of the role's tensor of `rows` rows (take -1: all of them).
struct WeightRows {
  WeightRole role;
  int64_t rows;
  int64_t row0 = 0, take = -1;
  int64_t count() const { return take < 0 ? rows - row0 : take; }
};

// Columns [col0, col0 + n) of every row of `all` columns (n -1: all of them).
struct WeightCols {
  int64_t all;
  int64_t col0 = 0, n = -1;
  int64_t count() const { return n < 0 ? all - col0 : n; }
  bool whole() const { return col0 == 0 && count() == all; }
};

}  // namespace sy
