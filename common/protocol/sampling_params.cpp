#include "common/protocol/sampling_params.h"

#include <cmath>

namespace sy {

std::string SamplingParams::validate() const {
  auto finite = [](float x) { return std::isfinite(x); };
  if (!finite(temperature) || temperature < 0 || temperature > 100) return "temperature must be in [0, 100]";
  if (top_k < 0 || top_k > 1'000'000) return "top_k must be 0 (off) or a positive integer";
  if (!finite(top_p) || top_p <= 0 || top_p > 1) return "top_p must be in (0, 1]";
  if (!finite(min_p) || min_p < 0 || min_p > 1) return "min_p must be in [0, 1]";
  if (!finite(repetition_penalty) || repetition_penalty <= 0 || repetition_penalty > 100) return "repetition_penalty must be in (0, 100]";
  if (!finite(presence_penalty) || presence_penalty < -2 || presence_penalty > 2) return "presence_penalty must be in [-2, 2]";
  if (!finite(frequency_penalty) || frequency_penalty < -2 || frequency_penalty > 2) return "frequency_penalty must be in [-2, 2]";
  if (max_tokens < 0) return "max_tokens must be >= 0";
  if (stop.size() > 16) return "at most 16 stop strings";
  for (const auto& s : stop)
    if (s.empty() || s.size() > 256) return "stop strings must be 1 to 256 bytes";
  if (stop_token_ids.size() > 64) return "at most 64 stop_token_ids";
  if (logprobs < -1 || logprobs > 20) return "top_logprobs must be in [0, 20]";
  return {};
}

PriorityClass priority_class(int32_t priority) {
  if (priority <= kPriorityInteractive) return PriorityClass::kInteractive;
  if (priority == kPriorityStandard) return PriorityClass::kStandard;
  return PriorityClass::kBatch;
}

const char* priority_class_name(PriorityClass c) {
  switch (c) {
    case PriorityClass::kInteractive: return "interactive";
    case PriorityClass::kStandard: return "standard";
    case PriorityClass::kBatch: return "batch";
  }
  return "?";
}

std::optional<int32_t> parse_priority_name(const std::string& name) {
  if (name == "interactive") return kPriorityInteractive;
  if (name == "standard") return kPriorityStandard;
  if (name == "batch") return kPriorityBatch;
  return std::nullopt;
}

}  // namespace sy
