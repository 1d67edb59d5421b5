// Runs whole requests to completion on a backend: batched (chunked) prefill of every
// prompt, then batched greedy decode until each sequence stops. This is the offline
// path used by the CLI, tests and benchmarks; the serving scheduler replaces the loop
// but drives the backend through the same BatchPlan.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/backend/backend.h"
#include "worker/engine/block_allocator.h"

namespace sy {

struct GenerateRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 16;
  std::vector<int32_t> stop_ids;  // end-of-generation tokens (not emitted)
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  enum class Finish { kLength, kStop } finish = Finish::kLength;
};

class Generator {
 public:
  // prefill_chunk: most prompt tokens one sequence runs per step (0: whole prompt).
  explicit Generator(Backend& backend, int32_t prefill_chunk = 0);

  // Greedy decoding. Throws std::invalid_argument if a request cannot fit the cache or
  // the model's context.
  std::vector<GenerateResult> generate(const std::vector<GenerateRequest>& requests);

  // Where generate() takes each argmax: on the device through forward_sample() where
  // the backend samples there (the default), or on the host from forward()'s logits.
  // Both choose the first index of the largest logit.
  void set_device_sampling(bool on) { device_sampling_ = on; }

  // Logits for every position of `prompt` ([prompt.size(), vocab]), or only the last.
  std::vector<float> prompt_logits(const std::vector<int32_t>& prompt, bool all_positions);

  // Wall time split of the last generate() call, for benchmarks: each step whole (the
  // plan, the backend, the token choice), counted as prefill when it ran prompt tokens.
  struct Timing {
    double prefill_s = 0;
    double decode_s = 0;
    int64_t prefill_tokens = 0;
    int64_t decode_tokens = 0;
  };
  const Timing& last_timing() const { return timing_; }

 private:
  Backend& backend_;
  BlockAllocator blocks_;
  int32_t prefill_chunk_;
  bool device_sampling_ = true;
  Timing timing_;
};

// Index of the largest logit (the first one on ties, as torch.argmax).
int32_t argmax(const float* logits, int32_t n);

}  // namespace sy
