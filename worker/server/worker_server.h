// The worker's HTTP API on top of the Engine (docs/PROTOCOL.md is the reference):
//   POST /v1/completions, POST /v1/chat/completions  OpenAI-compatible, streaming or not
//   GET  /v1/models, /health (liveness), /ready (503 until the engine's warm-up step),
//   GET  /metrics                                      Prometheus text
//   POST /internal/generate                            token ids in, token ids + text out (SSE)
//   GET  /internal/kv-events                           prefix cache hashes stored / removed (SSE)
//
// Threads: handlers run on the HTTP threads (one connection's strand each). They parse,
// render chat templates and tokenize there, then submit to the engine's queue; the
// engine thread calls each request's sink, which only posts the event back to the
// connection's strand, where it is formatted and written. A client that closes its
// connection cancels its request in the engine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/chat_template.h"
#include "common/http/server.h"
#include "common/metrics.h"
#include "common/protocol/openai.h"
#include "worker/engine/engine.h"

namespace sy {

struct WorkerServerOptions {
  std::string boot_id;                   // from --boot-id; /ready reports it
  std::vector<std::string> model_names;  // accepted `model` values; the first is reported
  uint64_t model_fingerprint = 0;        // reported by /ready
  // --chat-template-kwargs: template variables every chat request gets unless it sets
  // them in its own chat_template_kwargs (e.g. {"enable_thinking": false}).
  Json chat_template_kwargs = Json::object();
};

class WorkerServer : public LatencyObserver {
 public:
  // `engine` must outlive the server and be started by the caller; `chat_template` may
  // be null (a model without one: chat requests get a 400).
  WorkerServer(Engine& engine, std::shared_ptr<const ChatTemplate> chat_template,
               WorkerServerOptions options);
  ~WorkerServer() override;

  // The routes, for an http::HttpServer.
  http::Router router();
  MetricsRegistry& metrics() { return metrics_; }
  // Tokens per second over the last 10 s (the meter behind /metrics' *_tokens_per_second).
  ThroughputMeter& throughput() { return *throughput_; }

  // Before the engine stops: new requests get 503 and event streams end.
  void shutdown();

  // LatencyObserver (engine thread).
  void observe_ttft(double seconds) override { ttft_->observe(seconds); }
  void observe_itl(double seconds) override { itl_->observe(seconds); }

  // Prompt + generated tokens a request may hold: the model's context, or less when the
  // KV cache cannot hold that many.
  int32_t context_limit() const { return limits_.context_length; }

  // Shared with the route files.
  struct Shared;

 private:
  void handle_health(std::shared_ptr<http::Exchange> ex);
  void handle_ready(std::shared_ptr<http::Exchange> ex);
  void handle_models(std::shared_ptr<http::Exchange> ex);
  void handle_model(std::shared_ptr<http::Exchange> ex);
  void handle_metrics(std::shared_ptr<http::Exchange> ex);
  void register_metrics();

  Engine& engine_;
  WorkerServerOptions options_;
  ModelLimits limits_;
  MetricsRegistry metrics_;
  Histogram* ttft_ = nullptr;
  std::shared_ptr<ThroughputMeter> throughput_;
  Histogram* itl_ = nullptr;
  std::shared_ptr<Shared> shared_;
  const int64_t started_at_;  // unix seconds, for /v1/models
};

}  // namespace sy
