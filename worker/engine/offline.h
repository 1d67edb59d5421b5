// Offline runs of the serving engine: the CLI's generate, tests and benchmarks submit
// requests to an Engine that was never started and run its loop on the calling thread
// (Engine::run_until_idle), so they take the path `serve` takes (scheduler, KV cache
// with prefix cache, sampler, output processor) without an engine thread or HTTP.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/engine/engine.h"

namespace sy {

// What one request produced, as its sink received it.
struct Completion {
  std::vector<int32_t> token_ids;  // generated tokens; a stop token that ended it is not one
  std::string text;                // the streamed text and the finish event's, in order
  FinishEvent finish;
};

// A greedy request for `prompt` (temperature 0, at most `max_tokens` tokens, ending at
// the tokenizer's end-of-generation tokens).
EngineRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens);

// Runs `requests` to completion on `engine`, which must not have been started; their
// sinks are replaced and an empty id becomes "offline-<index>". Completions come in
// request order; a request the engine refused ends with FinishReason::kError.
// `step_seconds`, when given, receives each step's wall time in order (benchmarks).
std::vector<Completion> run_offline(Engine& engine, std::vector<EngineRequest> requests,
                                    std::vector<double>* step_seconds = nullptr);

}  // namespace sy
