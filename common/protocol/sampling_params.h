// How a request wants its tokens chosen and when it stops. Shared by the gateway (which
// parses requests and forwards them) and the worker (which samples).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sy {

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy (argmax)
  int32_t top_k = 0;                // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float repetition_penalty = 1.0f;  // 1: off; divides positive logits of seen tokens, multiplies negative
  float presence_penalty = 0.0f;    // subtracted once from the logit of every generated token
  float frequency_penalty = 0.0f;   // subtracted per occurrence among generated tokens
  std::optional<uint64_t> seed;     // draws are a pure function of (seed, token index)
  std::vector<std::string> stop;    // stop strings: output ends before the first match
  std::vector<int32_t> stop_token_ids;
  int32_t max_tokens = 16;          // counting tokens generated elsewhere (resume ids)
  bool ignore_eos = false;
  bool skip_special_tokens = true;  // in the returned text
  int32_t logprobs = -1;            // -1: none; k >= 0: the chosen token's logprob and the top k

  bool greedy() const { return temperature == 0.0f; }
  // Empty when every field is in range, else a message naming the first bad field.
  std::string validate() const;
};

// Priority classes; the request's `priority` is an integer (lower is more urgent) or
// one of these names.
enum class PriorityClass { kInteractive, kStandard, kBatch };
inline constexpr int32_t kPriorityInteractive = 0;
inline constexpr int32_t kPriorityStandard = 1;
inline constexpr int32_t kPriorityBatch = 2;
inline constexpr int32_t kPriorityMin = -100;
inline constexpr int32_t kPriorityMax = 100;

PriorityClass priority_class(int32_t priority);  // <= 0 interactive, 1 standard, >= 2 batch
const char* priority_class_name(PriorityClass c);
// "interactive" | "standard" | "batch" → its integer; nullopt for another string.
std::optional<int32_t> parse_priority_name(const std::string& name);

}  // namespace sy
