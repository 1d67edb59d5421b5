#include "worker/server/worker_server.h"

#include <unistd.h>

#include <algorithm>
#include <random>

#include "worker/server/routes.h"

namespace sy {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string WorkerServer::Shared::new_request_id(const char* prefix) {
  // A random per-process part keeps ids distinct across workers and restarts; the
  // counter keeps them distinct within one.
  static const uint64_t process_part =
      std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix,
                static_cast<unsigned long long>(process_part),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
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
      ttft_(metrics_.histogram("switchyard_worker_time_to_first_token_seconds",
                               "Time from a request's arrival in the engine to its first token.",
                               latency_buckets_seconds())),
      itl_(metrics_.histogram("switchyard_worker_inter_token_latency_seconds",
                              "Time between two tokens of a request.", latency_buckets_seconds())),
      shared_(std::make_shared<Shared>(engine, std::move(chat_template), options_, limits_)),
      started_at_(unix_now()) {
  register_metrics();
  engine_.set_latency_observer(this);
}

WorkerServer::~WorkerServer() {
  engine_.set_latency_observer(nullptr);
}

void WorkerServer::register_metrics() {
  const EngineStats& st = engine_.stats();
  auto gauge = [&](const char* name, const char* help, const std::atomic<int64_t>& v) {
    metrics_.gauge_fn(name, help, [&v] { return static_cast<double>(v.load()); });
  };
  auto counter = [&](const char* name, const char* help, const std::atomic<int64_t>& v) {
    metrics_.counter_fn(name, help, [&v] { return static_cast<double>(v.load()); });
  };
  gauge("switchyard_worker_requests_running", "Requests scheduled in the running batch.",
        st.requests_running);
  gauge("switchyard_worker_requests_waiting", "Requests waiting for admission (or preempted).",
        st.requests_waiting);
  gauge("switchyard_worker_kv_blocks_used", "KV cache blocks in use by requests.",
        st.kv_blocks_used);
  gauge("switchyard_worker_kv_blocks_total", "KV cache blocks in all.", st.kv_blocks_total);
  counter("switchyard_worker_prefix_cache_hit_tokens_total",
          "Prompt tokens served from the prefix cache.", st.prefix_cache_hit_tokens_total);
  counter("switchyard_worker_prompt_tokens_total", "Prompt tokens of accepted requests.",
          st.prompt_tokens_total);
  counter("switchyard_worker_generation_tokens_total", "Tokens generated.",
          st.generation_tokens_total);
  counter("switchyard_worker_requests_finished_total",
          "Requests that finished (stop, length or error).", st.requests_finished_total);
  counter("switchyard_worker_requests_aborted_total",
          "Requests cancelled (client gone or shutdown).", st.requests_aborted_total);
  counter("switchyard_worker_preemptions_total",
          "Requests preempted for KV space (recomputed later).", st.preemptions_total);
  counter("switchyard_worker_engine_steps_total", "Engine steps run.", st.steps_total);
  metrics_.gauge_fn("switchyard_worker_ready", "1 once the engine has run its warm-up step.",
                    [this] { return engine_.ready() && !shared_->stopping.load() ? 1.0 : 0.0; });
  const char* routes[] = {"/v1/completions", "/v1/chat/completions", "/internal/generate",
                          "/internal/kv-events"};
  for (int i = 0; i < 4; ++i)
    shared_->requests_total[i] =
        &metrics_.counter("switchyard_worker_http_requests_total",
                          "HTTP requests received by route.", {{"route", routes[i]}});
  shared_->e2e =
      &metrics_.histogram("switchyard_worker_e2e_request_latency_seconds",
                          "Time from a generation request's arrival to its last byte queued.",
                          latency_buckets_seconds());
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
  std::vector<std::weak_ptr<KvStreamHandle>> streams;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    streams.swap(shared_->kv_streams);
  }
  for (auto& w : streams)
    if (auto k = w.lock()) k->close();
}

void WorkerServer::handle_health(std::shared_ptr<http::Exchange> ex) {
  ex->respond_json(http::Status::ok, R"({"status":"ok"})");
}

void WorkerServer::handle_ready(std::shared_ptr<http::Exchange> ex) {
  const bool ready = engine_.ready() && !shared_->stopping.load();
  Json j;
  j["ready"] = ready;
  j["boot_id"] = options_.boot_id;
  j["pid"] = static_cast<int64_t>(::getpid());
  j["block_size"] = engine_.block_size();
  j["max_num_seqs"] = engine_.options().max_num_seqs;
  j["model"] = options_.model_names.empty() ? "" : options_.model_names[0];
  j["model_fingerprint"] = options_.model_fingerprint;
  j["max_model_len"] = limits_.context_length;
  j["kv_blocks_total"] = engine_.num_kv_blocks();
  ex->respond_json(ready ? http::Status::ok : http::Status::service_unavailable, dump_json(j));
}

void WorkerServer::handle_models(std::shared_ptr<http::Exchange> ex) {
  Json data = Json::array();
  for (const auto& name : options_.model_names) {
    Json m;
    m["id"] = name;
    m["object"] = "model";
    m["created"] = started_at_;
    m["owned_by"] = "switchyard";
    m["max_model_len"] = limits_.context_length;
    data.push_back(std::move(m));
  }
  Json j;
  j["object"] = "list";
  j["data"] = std::move(data);
  ex->respond_json(http::Status::ok, dump_json(j));
}

void WorkerServer::handle_metrics(std::shared_ptr<http::Exchange> ex) {
  ex->respond(http::Status::ok, MetricsRegistry::kContentType, metrics_.expose());
}

}  // namespace sy
