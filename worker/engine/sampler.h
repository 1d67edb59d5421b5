// Chooses the next token from a row of logits. Random draws are a pure function of
// (seed, token index): a request continued on another replica with the same seed and
// the ids generated so far draws exactly the same numbers.
//
// On a backend that samples on the device (Backend::samples_on_device(): cuda), the
// engine sends it the rows without penalties or logprobs instead, with the same draw.
// Greedy rows get the same argmax as here. Drawn rows follow the same candidate order,
// filters and draw (kernels/cuda/sampling.cuh), summing probabilities in float64 in
// another order, so the chosen id can differ from sample_token's only where a running
// sum meets a threshold within rounding; on one backend a (seed, index) pair always
// gives the same token for the same logits.
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

// The same with the draw given: sample_token(..., seed, index, ...) is
// sample_token_with_draw(..., sampling_uniform(seed, index), ...).
SampleResult sample_token_with_draw(std::span<const float> logits, const SamplingParams& p, double uniform,
                                    std::span<const int32_t> context, std::span<const int32_t> output);

// Constrained rows (a mask: every id outside `allowed` is at -inf), without penalties:
// the same token as sample_token_with_draw over the masked row, computed over the allowed
// ids only, so a step where a grammar allows a few tokens does not sort the vocabulary.
// `allowed`: ascending, unique ids of `logits`. Candidates keep the same order (logit
// descending, id ascending), filters and draw; masked ids have probability 0 and never
// change a sum. Logprobs are those of the masked row (normalized over `allowed`).
SampleResult sample_token_among(std::span<const float> logits, std::span<const int32_t> allowed, const SamplingParams& p,
                                double uniform);

}  // namespace sy
