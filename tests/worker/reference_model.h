// A straightforward, unpaged decoder forward pass written from the model definitions
// (plain loops, contiguous K/V, no BLAS, no threads): the independent reference that the
// paged, batched, chunked CPU backend is checked against on long prompts.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/model/weights.h"

namespace sy::testing {

// Logits [ids.size(), vocab] for every position of one sequence.
std::vector<float> reference_logits(const ModelWeights& w, const std::vector<int32_t>& ids);

}  // namespace sy::testing
