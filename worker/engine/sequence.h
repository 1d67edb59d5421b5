// One request's state inside the engine: its tokens, how much of them the KV cache
// holds, its blocks, and what it has sent back. Owned by the engine thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/tokenizer/incremental_decoder.h"
#include "worker/engine/request.h"

namespace sy {

struct Sequence {
  Sequence(EngineRequest r, uint64_t arrival_order, uint64_t draw_seed, const Tokenizer& tok)
      : request(std::move(r)), arrival(arrival_order), seed(draw_seed), decoder(tok, request.sampling.skip_special_tokens) {}

  EngineRequest request;
  uint64_t arrival;                    // submission order: earlier is served first
  uint64_t seed;                       // the request's seed, or one drawn at submission
  std::vector<int32_t> tokens;         // prompt, then resume ids, then tokens generated here
  int32_t prompt_len = 0;
  int32_t num_computed = 0;            // leading tokens whose KV is in `blocks`
  std::vector<int32_t> blocks;         // covers exactly the first num_computed tokens (+ this step's)
  std::vector<uint64_t> block_hashes;  // prefix hashes of full blocks of `tokens`, as far as known
  int32_t registered_blocks = 0;       // leading blocks whose hash is registered in the cache
  int32_t cached_tokens = -1;          // prefix-cache hit at first admission; -1 before
  bool running = false;
  std::optional<constrain::GrammarState> grammar_state;  // where request.grammar is set

  // Output state.
  IncrementalDecoder decoder;
  std::string unsent;  // decoded text held back because it may begin a stop string
  std::chrono::steady_clock::time_point arrived_at = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> last_token_at;

  int32_t priority() const { return request.priority; }
  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - prompt_len; }  // incl. resume ids
  int32_t remaining() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
  // Scheduling order: more urgent first, then earlier.
  std::pair<int32_t, uint64_t> order_key() const { return {request.priority, arrival}; }
};

}  // namespace sy
