// Engines that tests run offline (Engine::run_until_idle, on the test's thread) over a
// backend they opened, to compare logits and greedy tokens across backends and options.
#pragma once

#include <memory>
#include <vector>

#include "common/model_source.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/engine/offline.h"

namespace sy::testing {

// prefill_chunk 0: every prompt of a run in one step. Without prefix caching, so that
// each run computes every prompt token and several engines may share `backend` one
// after another.
inline std::unique_ptr<Engine> offline_engine(std::shared_ptr<Backend> backend, const ModelSource& src,
                                              int32_t prefill_chunk = 0, bool device_sampling = true) {
  EngineOptions o;
  o.prefill_chunk = prefill_chunk > 0 ? prefill_chunk : 1 << 30;
  o.prefix_caching = false;
  o.device_sampling = device_sampling;
  return std::make_unique<Engine>(std::move(backend), Tokenizer::from_model(src), o);
}

// Greedy requests of `max_tokens` tokens that run to the length limit (no stop token ends them).
inline std::vector<EngineRequest> greedy_requests(const std::vector<std::vector<int32_t>>& prompts, int32_t max_tokens) {
  std::vector<EngineRequest> out;
  for (const auto& p : prompts) {
    out.push_back(greedy_request(p, max_tokens));
    out.back().sampling.ignore_eos = true;
  }
  return out;
}

// The generated tokens of each request, in order.
inline std::vector<std::vector<int32_t>> run_tokens(Engine& engine, const std::vector<EngineRequest>& requests) {
  std::vector<std::vector<int32_t>> out;
  for (Completion& c : run_offline(engine, requests)) out.push_back(std::move(c.token_ids));
  return out;
}

}  // namespace sy::testing
