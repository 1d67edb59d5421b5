// The simulated worker's HTTP API: the routes of `switchyard-worker serve` with the
// same wire formats (docs/PROTOCOL.md):
//   POST /v1/completions, /v1/chat/completions (so a load generator can call it directly)
//   GET /health, /ready (503 until --ready-delay-ms has passed, and while stopping),
//   GET /metrics (the worker's switchyard_worker_* families), /v1/models,
//   POST /internal/generate, GET /internal/kv-events.
// Stop strings are not simulated: a request with `stop` is refused (400).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "bench/simworker/sim_engine.h"
#include "bench/simworker/sim_request.h"
#include "common/chat_template.h"
#include "common/http/kv_event_stream.h"
#include "common/http/server.h"
#include "common/metrics.h"
#include "common/protocol/openai.h"

namespace sy::sim {

struct SimServerOptions {
  std::string boot_id;
  std::string model_name;
  uint64_t model_fingerprint = 0;
  ModelLimits limits;  // context: the model's, or less when the KV blocks hold less
  std::chrono::milliseconds ready_delay{0};
};

class SimServer {
 public:
  // `tokenizer`, `tokens` and `engine` must outlive the server; `chat_template` may be
  // null (chat requests are refused).
  SimServer(SimEngine& engine, const Tokenizer& tokenizer, std::shared_ptr<const ChatTemplate> chat_template,
            const TokenSource& tokens, SimTiming timing, SimServerOptions options);

  http::Router router();
  MetricsRegistry& metrics() { return metrics_; }  // served at /metrics
  // Before the HTTP threads stop: /ready turns 503, new requests get 503, event streams
  // end and live requests end with an `aborted` error event.
  void shutdown();

 private:
  bool ready() const;
  void handle_ready(std::shared_ptr<http::Exchange> ex);
  void handle_generate(std::shared_ptr<http::Exchange> ex);
  void handle_openai(ApiKind kind, std::shared_ptr<http::Exchange> ex);
  std::optional<ApiError> admit() const;  // 503 while not ready or stopping
  // Submits the request; false (answered 409) when its id is live already.
  bool run(std::shared_ptr<http::Exchange> ex, std::unique_ptr<SimOutput> out, InternalGenerateRequest req,
           SimRequest::Clock::time_point arrived);

  SimEngine& engine_;
  const Tokenizer& tokenizer_;
  std::shared_ptr<const ChatTemplate> chat_template_;
  SimServerOptions options_;
  MetricsRegistry metrics_;
  WorkerMetrics series_;
  SimContext ctx_;
  http::KvEventStreams kv_streams_;
  std::atomic<bool> stopping_{false};
  const std::chrono::steady_clock::time_point ready_at_;
  const int64_t started_at_;  // unix seconds, for /v1/models
};

}  // namespace sy::sim
