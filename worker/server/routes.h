// Internal to worker/server: what the route handlers share, and the handlers themselves
// (openai_routes.cpp, internal_routes.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/http/kv_event_stream.h"
#include "worker/server/worker_server.h"

namespace sy {

struct WorkerServer::Shared {
  Engine& engine;
  std::shared_ptr<const ChatTemplate> chat_template;
  WorkerServerOptions options;
  ModelLimits limits;
  Counter* requests_total[kNumWorkerRoutes] = {};  // by WorkerRoute
  Histogram* e2e = nullptr;
  std::atomic<bool> stopping{false};

  // Ids of requests in the engine: /internal/generate refuses a duplicate (cancel()
  // would hit both).
  std::mutex mu;
  std::unordered_set<std::string> live_ids;
  http::KvEventStreams kv_streams;  // ended by shutdown()

  Shared(Engine& e, std::shared_ptr<const ChatTemplate> t, WorkerServerOptions o, ModelLimits l)
      : engine(e), chat_template(std::move(t)), options(std::move(o)), limits(l), kv_streams(e.kv_events()) {}

  bool claim_id(const std::string& id);  // false when live already
  void release_id(const std::string& id);
  // 503 while not ready or stopping; true when the request may go on.
  bool admit(http::Exchange& ex);
};

void handle_openai(std::shared_ptr<WorkerServer::Shared> s, ApiKind kind,
                   std::shared_ptr<http::Exchange> ex);
void handle_internal_generate(std::shared_ptr<WorkerServer::Shared> s,
                              std::shared_ptr<http::Exchange> ex);
void handle_kv_events(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex);

// Seconds since the epoch.
int64_t unix_now();

}  // namespace sy
