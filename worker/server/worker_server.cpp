#include "worker/server/worker_server.h"

#include <unistd.h>

#include <algorithm>

#include "common/http/path.h"
#include "common/protocol/internal_api.h"
#include "worker/server/routes.h"

namespace sy {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool WorkerServer::Shared::claim_id(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu);
  return live_ids.insert(id).second;
}

void WorkerServer::Shared::release_id(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu);
  live_ids.erase(id);
}

bool WorkerServer::Shared::admit(http::Exchange& ex) {
  if (stopping.load()) {
    ex.respond_error(ApiError::unavailable("the worker is shutting down", "shutting_down"));
    return false;
  }
  if (!engine.ready()) {
    ex.respond_error(ApiError::unavailable("the worker is not ready yet", "not_ready"));
    return false;
  }
  return true;
}

namespace {

ModelLimits model_limits(const Engine& e) {
  const int64_t kv_tokens = static_cast<int64_t>(e.num_kv_blocks()) * e.block_size();
  ModelLimits l;
  l.context_length = static_cast<int32_t>(std::min<int64_t>(e.config().max_context, kv_tokens));
  l.vocab_size = e.config().vocab;
  return l;
}

}  // namespace

WorkerServer::WorkerServer(Engine& engine, std::shared_ptr<const ChatTemplate> chat_template,
                           WorkerServerOptions options)
    : engine_(engine),
      options_(std::move(options)),
      limits_(model_limits(engine)),
      shared_(std::make_shared<Shared>(engine, std::move(chat_template), options_, limits_)),
      started_at_(unix_now()) {
  register_metrics();
  engine_.set_latency_observer(this);
}

WorkerServer::~WorkerServer() {
  engine_.set_latency_observer(nullptr);
}

void WorkerServer::register_metrics() {
  const WorkerMetrics m = register_worker_metrics(
      metrics_, engine_.stats(), [this] { return engine_.ready() && !shared_->stopping.load(); });
  ttft_ = m.ttft;
  throughput_ = m.throughput;
  itl_ = m.itl;
  for (int i = 0; i < kNumWorkerRoutes; ++i) shared_->requests_total[i] = m.requests_total[i];
  shared_->e2e = m.e2e;
}

http::Router WorkerServer::router() {
  http::Router r;
  auto s = shared_;
  r.add(http::Verb::post, "/v1/completions", [s](std::shared_ptr<http::Exchange> ex) {
    handle_openai(s, ApiKind::kCompletion, std::move(ex));
  });
  r.add(http::Verb::post, "/v1/chat/completions", [s](std::shared_ptr<http::Exchange> ex) {
    handle_openai(s, ApiKind::kChatCompletion, std::move(ex));
  });
  r.add(http::Verb::post, "/internal/generate",
        [s](std::shared_ptr<http::Exchange> ex) { handle_internal_generate(s, std::move(ex)); });
  r.add(http::Verb::get, "/internal/kv-events",
        [s](std::shared_ptr<http::Exchange> ex) { handle_kv_events(s, std::move(ex)); });
  r.add(http::Verb::get, "/v1/models",
        [this](std::shared_ptr<http::Exchange> ex) { handle_models(std::move(ex)); });
  r.add(http::Verb::get, "/v1/models/*",
        [this](std::shared_ptr<http::Exchange> ex) { handle_model(std::move(ex)); });
  r.add(http::Verb::get, "/health",
        [this](std::shared_ptr<http::Exchange> ex) { handle_health(std::move(ex)); });
  r.add(http::Verb::get, "/ready",
        [this](std::shared_ptr<http::Exchange> ex) { handle_ready(std::move(ex)); });
  r.add(http::Verb::get, "/metrics",
        [this](std::shared_ptr<http::Exchange> ex) { handle_metrics(std::move(ex)); });
  return r;
}

void WorkerServer::shutdown() {
  shared_->stopping.store(true);
  shared_->kv_streams.close_all();
}

void WorkerServer::handle_health(std::shared_ptr<http::Exchange> ex) {
  ex->respond_json(http::Status::ok, R"({"status":"ok"})");
}

void WorkerServer::handle_ready(std::shared_ptr<http::Exchange> ex) {
  WorkerReadiness r;
  r.ready = engine_.ready() && !shared_->stopping.load();
  r.boot_id = options_.boot_id;
  r.pid = ::getpid();
  r.block_size = engine_.block_size();
  r.max_num_seqs = engine_.options().max_num_seqs;
  r.model = options_.model_names.empty() ? "" : options_.model_names[0];
  r.model_fingerprint = options_.model_fingerprint;
  r.max_model_len = limits_.context_length;
  r.kv_blocks_total = engine_.num_kv_blocks();
  ex->respond_json(r.ready ? http::Status::ok : http::Status::service_unavailable,
                   worker_readiness_json(r));
}

void WorkerServer::handle_models(std::shared_ptr<http::Exchange> ex) {
  ex->respond_json(http::Status::ok,
                   models_list_json(options_.model_names, started_at_, limits_.context_length));
}

// GET /v1/models/{id}: that entry of the list, or 404 model_not_found.
void WorkerServer::handle_model(std::shared_ptr<http::Exchange> ex) {
  const std::string id = http::percent_decode(ex->path().substr(std::string_view("/v1/models/").size()));
  const auto list = nlohmann::json::parse(
      models_list_json(options_.model_names, started_at_, limits_.context_length));
  for (const auto& m : list["data"])
    if (m["id"] == id) return ex->respond_json(http::Status::ok, m.dump());
  ex->respond_error(ApiError::model_not_found(id));
}

void WorkerServer::handle_metrics(std::shared_ptr<http::Exchange> ex) {
  ex->respond(http::Status::ok, MetricsRegistry::kContentType, metrics_.expose());
}

}  // namespace sy
