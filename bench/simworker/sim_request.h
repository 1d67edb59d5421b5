// One /internal/generate stream of the simulated worker, driven on its connection's
// strand: it waits for admission, then a time to first token of
//   ttft_ms + prefill_us_per_token × (tokens the prefix cache did not hold),
// then emits one token per itl_ms (each delay scaled by a uniform draw from
// [1 − jitter, 1 + jitter]), until max_tokens (resume ids counted) or a stop token id.
// Events and their text are the worker's (docs/PROTOCOL.md): `tokens` with the index of
// the id among all generated ones and the text it completes (the real tokenizer's
// incremental decoding), then `finish` with the usage. A client that leaves cancels it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/simworker/shared_timeline.h"
#include "bench/simworker/sim_output.h"
#include "bench/simworker/token_source.h"
#include "common/http/server.h"
#include "common/protocol/internal_api.h"
#include "common/tokenizer/incremental_decoder.h"
#include "common/worker_metrics.h"

namespace sy::sim {

class SimEngine;

struct SimTiming {
  double ttft_ms = 10;                // fixed part of the time to first token
  double prefill_us_per_token = 100;  // per prompt token not served from the cache
  double host_load_us_per_token = 2.5;  // per cached token copied back from the KV host tier
  double itl_ms = 10;                 // between two tokens
  double jitter = 0;                  // each delay × uniform[1 − jitter, 1 + jitter]
  bool serial_prefill = false;        // prefills run one after another, as on one GPU
};

// What every request of one simulated worker shares; outlives them all.
struct SimContext {
  SimEngine& engine;
  const Tokenizer& tokenizer;
  const TokenSource& tokens;
  const WorkerMetrics& metrics;
  SimTiming timing;
};

class SimRequest : public std::enable_shared_from_this<SimRequest> {
 public:
  using Clock = std::chrono::steady_clock;

  // `req` has passed check_internal_generate (or came from a checked OpenAI request);
  // `out` writes to `ex`. `seed`: the request's, or one drawn for it.
  SimRequest(const SimContext& ctx, std::shared_ptr<http::Exchange> ex, std::unique_ptr<SimOutput> out,
             InternalGenerateRequest req, uint64_t seed, uint64_t jitter_seed, Clock::time_point arrived);

  const std::string& id() const { return req_.request_id; }
  int32_t priority() const { return req_.priority; }
  // Prompt then resume ids: what the cache is asked for at admission.
  const std::vector<int32_t>& start_tokens() const { return start_tokens_; }
  int32_t prompt_tokens() const { return static_cast<int32_t>(req_.prompt_ids.size()); }
  // Tokens the request may hold at most: KV blocks are reserved for them.
  int32_t max_context() const;

  // From the engine, any thread; `loaded_tokens` of the cached ones came back from the
  // KV host tier (their copy is charged before the prefill).
  void admitted(int32_t cached_tokens, int32_t loaded_tokens = 0);
  void abort();  // shutdown: an `aborted` error event ends the stream
  // From the connection, on its strand: the client left.
  void cancel();

 private:
  void begin(int32_t cached_tokens, int32_t loaded_tokens);
  void arm(double ms, void (SimRequest::*next)());
  void prefilled();  // the queued prefill's time came: first token, or wait on
  void first_token();
  void next_token();
  void end(const char* reason, std::string matched_stop);
  void stop_decoding();  // the engine counts it off its requests decoding (once)
  double jittered(double ms);

  const SimContext& ctx_;
  std::shared_ptr<http::Exchange> ex_;
  std::unique_ptr<SimOutput> out_;
  const InternalGenerateRequest req_;
  const uint64_t seed_;
  const Clock::time_point arrived_;
  std::vector<int32_t> start_tokens_;
  std::vector<int32_t> tokens_;  // start tokens, then those generated here
  int32_t generated_ = 0;        // resume ids included
  int32_t cached_tokens_ = 0;
  IncrementalDecoder decoder_;
  boost::asio::steady_timer timer_;
  std::minstd_rand jitter_rng_;
  Clock::time_point last_token_at_{};
  bool done_ = false;
  bool decoding_ = false;  // between its first token and its end
  SharedTimeline::Queued prefill_;  // serial prefill: its prefill as queued, then the
  double ttft_ms_ = 0;              // fixed part of its first token's latency
};

}  // namespace sy::sim
