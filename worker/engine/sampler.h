// Chooses the next token from a row of logits. Random draws are a pure function of
// (seed, token index): a request continued on another replica with the same seed and
// the ids generated so far draws exactly the same numbers.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "common/protocol/sampling_params.h"

namespace sy {

struct SampleResult {
  int32_t id = 0;
  float logprob = 0;                                    // of `id` under the raw logits
  std::vector<std::pair<int32_t, float>> top_logprobs;  // top p.logprobs ids, best first
};

// The uniform draw in [0, 1) for token `index` of a request seeded with `seed`.
double sampling_uniform(uint64_t seed, int64_t index);

// Order of processing, as vLLM and transformers do it: repetition, presence and
// frequency penalties; then temperature; then top-k, top-p and min-p; then the draw
// (or argmax when greedy). Logprobs come from the raw logits (log-softmax before any
// processing). `context` is prompt + output so far (repetition penalty looks at all of
// it); `output` is the generated part (presence/frequency penalties).
SampleResult sample_token(std::span<const float> logits, const SamplingParams& p, uint64_t seed, int64_t index,
                          std::span<const int32_t> context, std::span<const int32_t> output);

}  // namespace sy
