#include "gateway/gateway.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <thread>

#include "common/constrain/tool_constraint.h"
#include "common/model_identity.h"
#include "common/model_limits.h"
#include "common/model_source.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/prompt.h"
#include "common/http/path.h"
#include "common/http/server_limits.h"
#include "common/http/server_metrics.h"
#include "gateway/dashboard.h"
#include "gateway/worker_scrape.h"
#include "policy/block_hash.h"

namespace sy::gateway {
namespace {

double epoch_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

int64_t unix_seconds() { return static_cast<int64_t>(epoch_now()); }

void log_line(const std::string& m) { std::fprintf(stderr, "gateway: %s\n", m.c_str()); }

// The token of `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 7235).
std::string bearer_token(const http::Exchange& ex) {
  auto it = ex.request().find(boost::beast::http::field::authorization);
  if (it == ex.request().end()) return {};
  std::string_view v(it->value().data(), it->value().size());
  if (v.size() < 7 || !boost::beast::iequals(v.substr(0, 6), "Bearer") || (v[6] != ' ' && v[6] != '\t')) return {};
  v.remove_prefix(7);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return std::string(v);
}

http::ServerOptions server_options(const FleetConfig& c, const std::string& listen) {
  http::ServerOptions o;
  const auto [host, port] = split_host_port(listen);
  o.host = host;
  o.port = port;
  http::apply_limits(c.limits, o);
  o.server_name = "switchyard-gateway";
  o.log = [](const std::string& m) { log_line("http: " + m); };
  return o;
}

}  // namespace

Gateway::Gateway(FleetConfig config)
    : config_(std::move(config)),
      core_strand_(boost::asio::make_strand(ioc_)),
      drain_timer_(core_strand_),
      metrics_timer_(core_strand_),
      history_timer_(core_strand_),
      signals_(ioc_, SIGTERM, SIGINT),
      key_limits_(std::make_shared<KeyLimits>(config_)),
      cors_(config_.cors.allow_origins) {
  load_model();
  core_ = std::make_shared<GatewayCore>(core_strand_, config_, std::make_shared<policy::SteadyClock>(),
                                        std::make_shared<policy::SplitMixRandom>(std::random_device{}()));
  SupervisorOptions so;
  so.fleet = config_;
  so.gateway_id = "gw" + std::to_string(::getpid());
  so.log = log_line;
  supervisor_ = std::make_shared<Supervisor>(core_strand_, so);
  supervisor_->on_change = [this](const ReplicaInfo& r) { on_replica_change(r); };
  startup_power_ = std::make_unique<StartupPower>(config_, log_line);
  if (startup_power_->enabled()) supervisor_->start_gate = [this] { return startup_power_->may_start(); };
  history_ = std::make_unique<History>(core_->clock());
  ctx_ = std::make_shared<ProxyContext>();
  ctx_->core = core_;
  ctx_->random = std::make_shared<policy::SplitMixRandom>(std::random_device{}());
  ctx_->tokenizer = tokenizer_;
  ctx_->fingerprint = fingerprint_;
  ctx_->block_size = config_.worker.block_size;
  key_limits_->register_metrics(metrics_);
  register_counters();
}

Gateway::~Gateway() = default;

void Gateway::load_model() {
  auto src = ModelSource::open(config_.model);
  tokenizer_ = Tokenizer::from_model(*src);
  try {
    chat_template_ = std::make_unique<ChatTemplate>(ChatTemplate::from_model(*src, tokenizer_->bos_token(), tokenizer_->eos_token()));
  } catch (const std::exception& e) {
    log_line(std::string("no usable chat template (") + e.what() + "); /v1/chat/completions will refuse requests");
  }
  limits_ = read_model_limits(*src);
  // The workers compute the same fingerprint from the same file, so block hashes agree.
  fingerprint_ = policy::model_fingerprint(model_identity_description(config_.model));
}

bool Gateway::admit_user(http::Exchange& ex, std::string& key) const {
  key = bearer_token(ex);
  if (config_.api_keys.empty() || std::find(config_.api_keys.begin(), config_.api_keys.end(), key) != config_.api_keys.end())
    return true;
  ex.respond_error(ApiError{401, "authentication_error", "a valid API key is required", "", "invalid_api_key"});
  return false;
}

bool Gateway::authorized_admin(const http::Exchange& ex) const {
  return config_.admin_key.empty() || bearer_token(ex) == config_.admin_key;
}

void Gateway::add_front_routes(http::Router& r) {
  cors_.add(r, http::Verb::post, "/v1/completions", [this](auto ex) { handle_openai(ApiKind::kCompletion, std::move(ex)); });
  cors_.add(r, http::Verb::post, "/v1/chat/completions", [this](auto ex) { handle_openai(ApiKind::kChatCompletion, std::move(ex)); });
  cors_.add(r, http::Verb::get, "/v1/models", [this](auto ex) { handle_models(std::move(ex)); });
  cors_.add(r, http::Verb::get, "/v1/models/*", [this](auto ex) { handle_model(std::move(ex)); });
  r.add(http::Verb::get, "/health", [](auto ex) { ex->respond_json(http::Status::ok, R"({"status":"ok"})"); });
  r.add(http::Verb::get, "/ready", [this](auto ex) {
    boost::asio::post(core_strand_, [this, ex] {
      const bool ready = !shutting_down_ && core_->fleet().any_with_room();
      ex->respond_json(ready ? http::Status::ok : http::Status::service_unavailable, ready ? R"({"ready":true})" : R"({"ready":false})");
    });
  });
}

void Gateway::add_admin_routes(http::Router& r) {
  auto guarded = [this](void (Gateway::*h)(std::shared_ptr<http::Exchange>)) {
    return [this, h](std::shared_ptr<http::Exchange> ex) {
      if (!authorized_admin(*ex)) return ex->respond_error(ApiError{401, "authentication_error", "the admin key is required", "", "unauthorized"});
      (this->*h)(std::move(ex));
    };
  };
  r.add(http::Verb::get, "/admin/status", guarded(&Gateway::handle_status));
  r.add(http::Verb::get, "/admin/events", guarded(&Gateway::handle_events));
  r.add(http::Verb::get, "/admin/history", guarded(&Gateway::handle_history));
  r.add(http::Verb::post, "/admin/mode", guarded(&Gateway::handle_mode));
  r.add(http::Verb::get, "/metrics", guarded(&Gateway::handle_metrics));
  // The page holds no data (its own API calls carry the admin key), and a browser
  // cannot send a bearer token when it opens a page.
  r.add(http::Verb::get, "/dashboard", [](std::shared_ptr<http::Exchange> ex) {
    ex->respond(http::Status::ok, "text/html; charset=utf-8", std::string(kDashboardHtml));
  });
}

void Gateway::handle_models(std::shared_ptr<http::Exchange> ex) {
  std::string key;
  if (!admit_user(*ex, key)) return;
  ex->respond_json(http::Status::ok, models_list_json({config_.served_model_name}, unix_seconds(), limits_.context_length));
}

// GET /v1/models/{id}: the model object of the list, or 404 model_not_found.
void Gateway::handle_model(std::shared_ptr<http::Exchange> ex) {
  std::string key;
  if (!admit_user(*ex, key)) return;
  const std::string id = http::percent_decode(ex->path().substr(std::string_view("/v1/models/").size()));
  if (id != config_.served_model_name) return ex->respond_error(ApiError::model_not_found(id));
  const auto list = nlohmann::json::parse(models_list_json({config_.served_model_name}, unix_seconds(), limits_.context_length));
  ex->respond_json(http::Status::ok, list["data"][0].dump());
}

void Gateway::handle_openai(ApiKind kind, std::shared_ptr<http::Exchange> ex) {
  std::string key;
  if (!admit_user(*ex, key)) return;
  if (!key_limits_->admit(key, *ex)) return;  // 429 with Retry-After
  if (shutting_down_) return ex->respond_error(ApiError::unavailable("the gateway is shutting down", "shutting_down"));
  OpenAiRequest req;
  const std::string& body = ex->request().body();
  if (auto e = kind == ApiKind::kChatCompletion ? parse_chat_request(body, req) : parse_completion_request(body, req)) return ex->respond_error(*e);
  if (!req.model.empty() && req.model != config_.served_model_name) return ex->respond_error(ApiError::model_not_found(req.model));
  std::optional<std::string_view> header;
  if (auto h = ex->request().find("X-Priority"); h != ex->request().end()) header = std::string_view(h->value().data(), h->value().size());
  int32_t priority = kPriorityStandard;
  if (auto e = request_priority(req, header, priority)) return ex->respond_error(*e);
  std::vector<int32_t> ids;
  ChatOutputSpec output;  // how the reply is read (reasoning, tool calls); the responder parses it here
  if (kind == ApiKind::kChatCompletion)  // the fleet's default template variables, under the request's own
    apply_default_template_kwargs(Json::parse(config_.chat_template_kwargs, nullptr, false), req);
  if (auto e = prompt_ids_for(req, *tokenizer_, chat_template_.get(), ids, &output)) return ex->respond_error(*e);
  if (auto e = check_prompt(ids, limits_, req)) return ex->respond_error(*e);
  Json constraint;  // checked here so that a schema the mask cannot enforce is a 400 before routing
  if (auto e = constrain::tool_constraint_spec(req, output, constraint)) return ex->respond_error(*e);
  const uint64_t id = next_id_++;
  std::ostringstream rid;
  rid << (kind == ApiKind::kChatCompletion ? "chatcmpl-" : "cmpl-") << std::hex << ::getpid() << "g" << id;
  ResponseHeader h{kind, rid.str(), req.model.empty() ? config_.served_model_name : req.model, unix_seconds()};
  h.output = output;
  RequestIo io{exchange_client(ex, h, *tokenizer_, req), upstream_connect(ex->executor()), steady_alarm(ex->executor(), core_->clock())};
  auto proxy = std::make_shared<ProxyRequest>(ctx_, std::move(io), std::move(req), std::move(ids), std::move(h), priority, key, id);
  proxy->start();
}

void Gateway::handle_status(std::shared_ptr<http::Exchange> ex) {
  boost::asio::post(core_strand_, [this, ex] { ex->respond_json(http::Status::ok, status_json().dump()); });
}

void Gateway::handle_events(std::shared_ptr<http::Exchange> ex) {
  boost::asio::post(core_strand_, [this, ex] {
    ex->start_stream();
    ex->write("event: status\ndata: " + status_json().dump() + "\n\n");
    event_subscribers_.push_back(ex);
  });
}

void Gateway::publish_event(const nlohmann::json& event) {
  const std::string frame = "event: " + event.value("type", std::string("event")) + "\ndata: " + event.dump() + "\n\n";
  std::erase_if(event_subscribers_, [&](const std::shared_ptr<http::Exchange>& ex) { return ex->cancelled() || !ex->write(frame); });
}

// The core's counters are read when /metrics is exposed, on the core strand (see
// handle_metrics), so the reads need no lock; typed as counters, as Prometheus expects
// of a name ending in _total.
void Gateway::register_counters() {
  auto counter = [this](const char* name, const char* help, int64_t GatewayCounters::*field, const MetricLabels& labels = {}) {
    metrics_.counter_fn(name, help, [this, field] { return static_cast<double>(core_->counters().*field); }, labels);
  };
  counter("switchyard_gateway_requests_total", "Client requests accepted for routing", &GatewayCounters::requests_total);
  counter("switchyard_gateway_requests_finished_total", "Requests by outcome", &GatewayCounters::completed, {{"outcome", "completed"}});
  counter("switchyard_gateway_requests_finished_total", "Requests by outcome", &GatewayCounters::failed, {{"outcome", "failed"}});
  counter("switchyard_gateway_requests_finished_total", "Requests by outcome", &GatewayCounters::cancelled, {{"outcome", "cancelled"}});
  counter("switchyard_gateway_requests_rejected_total", "Requests refused before routing", &GatewayCounters::rejected_queue_full, {{"reason", "queue_full"}});
  counter("switchyard_gateway_requests_rejected_total", "Requests refused before routing", &GatewayCounters::rejected_no_replica, {{"reason", "no_replica"}});
  counter("switchyard_gateway_output_tokens_total", "Tokens generated for clients", &GatewayCounters::output_tokens);
  counter("switchyard_gateway_retries_total", "Attempts sent again after a failed attempt (failover)", &GatewayCounters::retries);
  counter("switchyard_gateway_retries_denied_total", "Failed attempts the retry budget did not pay for", &GatewayCounters::retries_denied);
  counter("switchyard_gateway_failure_events_total", "Replica failures whose requests' retries were budgeted once, together", &GatewayCounters::failure_events);
  counter("switchyard_gateway_hedges_total", "Second attempts sent before a first token", &GatewayCounters::hedges);
  counter("switchyard_gateway_hedges_won_total", "Hedges that produced the first token", &GatewayCounters::hedges_won);
  counter("switchyard_gateway_hedges_denied_total", "Hedges the budget refused", &GatewayCounters::hedges_denied);
  counter("switchyard_gateway_hedges_deferred_total", "Hedges put off because no other replica predicted a sooner first token",
          &GatewayCounters::hedges_deferred);
  counter("switchyard_gateway_stalls_total", "Attempts failed over for silence (stall or no first token)", &GatewayCounters::stalls);
  counter("switchyard_gateway_preempted_total", "Workers' notices that an attempt was preempted and recomputes its context", &GatewayCounters::preempted);
  counter("switchyard_gateway_prompt_tokens_total", "Prompt tokens of finished requests", &GatewayCounters::prompt_tokens);
  counter("switchyard_gateway_cached_prompt_tokens_total", "Prompt tokens served from workers' prefix caches", &GatewayCounters::cached_tokens);
  counter("switchyard_gateway_oracle_prompt_tokens_total", "Prompt tokens of requests at their first dispatch", &GatewayCounters::oracle_prompt_tokens);
  counter("switchyard_gateway_oracle_cached_tokens_total", "Of those, tokens the replica holding most of each prompt had cached", &GatewayCounters::oracle_cached_tokens);
}

void Gateway::handle_metrics(std::shared_ptr<http::Exchange> ex) {
  boost::asio::post(core_strand_, [this, ex] {
    metrics_.gauge("switchyard_gateway_in_flight", "Requests sent to workers and not finished").set(static_cast<double>(core_->in_flight()));
    for (auto cls : {PriorityClass::kInteractive, PriorityClass::kStandard, PriorityClass::kBatch})
      metrics_.gauge("switchyard_gateway_queue_length", "Requests waiting in the gateway's queue", {{"class", priority_class_name(cls)}})
          .set(static_cast<double>(core_->queue().size(cls)));
    const Fleet& fleet = core_->fleet();
    for (size_t i = 0; i < fleet.size(); ++i) {
      const MetricLabels l = {{"replica", fleet.info(i).id}};
      metrics_.gauge("switchyard_gateway_replica_ready", "1 when the replica is ready", l).set(fleet.info(i).phase == ReplicaPhase::kReady);
      metrics_.gauge("switchyard_gateway_replica_restarts", "Restarts of the replica", l).set(fleet.info(i).restarts);
      metrics_.gauge("switchyard_gateway_replica_in_flight", "Requests in flight on the replica", l).set(fleet.load(i).in_flight);
    }
    for (const auto& [name, m] : config_.modes)
      metrics_.gauge("switchyard_gateway_mode", "1 for the fleet's current mode", {{"mode", name}}).set(name == mode_);
    ex->respond(http::Status::ok, "text/plain; version=0.0.4; charset=utf-8", metrics_.expose());
  });
}

void Gateway::handle_mode(std::shared_ptr<http::Exchange> ex) {
  const auto j = nlohmann::json::parse(ex->request().body(), nullptr, false);
  if (!j.is_object() || !j.contains("mode") || !j["mode"].is_string())
    return ex->respond_error(ApiError::bad_request("the body must be {\"mode\": \"<name>\"}", "mode"));
  const std::string mode = j["mode"];
  if (!config_.modes.count(mode)) return ex->respond_error(ApiError::bad_request("unknown mode '" + echo_input(mode) + "'", "mode"));
  boost::asio::post(core_strand_, [this, ex, mode] {
    if (switching_) return ex->respond_error(ApiError{409, "invalid_request_error", "a mode switch is in progress", "mode", "switch_in_progress"});
    if (mode == mode_) return ex->respond_json(http::Status::ok, nlohmann::json{{"mode", mode_}, {"switching", false}}.dump());
    if (controller_) controller_->switched(mode == "latency" ? policy::FleetMode::kLatency : policy::FleetMode::kThroughput);
    switch_mode(mode);
    ex->respond_json(http::Status::accepted, nlohmann::json{{"mode", mode}, {"switching", true}}.dump());
  });
}

// Drain (new requests wait in the queue), let in-flight requests finish, stop the fleet,
// start it in the new shape (staggered), resume.
void Gateway::switch_mode(const std::string& mode) {
  switching_ = true;
  switch_started_ = epoch_now();
  const std::string from = mode_;
  log_line("mode switch " + from + " → " + mode + ": draining");
  publish_event({{"type", "mode"}, {"phase", "draining"}, {"from", from}, {"to", mode}});
  history_->mark("mode", from + " → " + mode + ": draining");
  core_->set_paused(true);
  supervisor_->mark_draining();
  wait_drained([this, mode, from] {
    publish_event({{"type", "mode"}, {"phase", "stopping"}, {"from", from}, {"to", mode}});
    supervisor_->stop_all(std::chrono::seconds(10), [this, mode, from] {
      mode_ = mode;
      core_->fleet().reset(static_cast<size_t>(config_.modes.at(mode).replicas));
      supervisor_->start(config_.modes.at(mode));
      core_->set_paused(false);
      last_switch_ = {{"from", from}, {"to", mode}, {"started_at", switch_started_}, {"finished_at", nullptr}, {"seconds", nullptr}};
      publish_event({{"type", "mode"}, {"phase", "starting"}, {"from", from}, {"to", mode}});
    });
  });
}

void Gateway::wait_drained(std::function<void()> then) {
  if (core_->in_flight() == 0) return then();
  drain_timer_.expires_after(std::chrono::milliseconds(50));
  drain_timer_.async_wait([this, then = std::move(then)](boost::system::error_code ec) mutable {
    if (!ec) wait_drained(std::move(then));
  });
}

void Gateway::on_replica_change(const ReplicaInfo& r) {
  core_->fleet().on_replica_change(r);
  startup_power_->on_replica_change(r);
  if (r.phase == ReplicaPhase::kRestarting) history_->mark("restart", r.id + " restarting (" + std::to_string(r.restarts) + ")");
  if (r.phase == ReplicaPhase::kStarting) history_->mark("start", r.id + " starting");
  if (r.phase == ReplicaPhase::kReady) history_->mark("ready", r.id + " ready");
  publish_event({{"type", "replica"}, {"id", r.id}, {"state", replica_phase_name(r.phase)}, {"pid", r.pid}, {"restarts", r.restarts}});
  if (switching_ && supervisor_->mode() == mode_) {
    bool all_ready = true;
    for (const auto& x : supervisor_->replicas()) all_ready = all_ready && x.phase == ReplicaPhase::kReady;
    if (all_ready && !supervisor_->replicas().empty()) {
      switching_ = false;
      const double now = epoch_now();
      last_switch_["finished_at"] = now;
      last_switch_["seconds"] = now - switch_started_;
      log_line("mode switch to " + mode_ + " done in " + std::to_string(now - switch_started_) + " s");
      publish_event({{"type", "mode"}, {"phase", "done"}, {"to", mode_}, {"seconds", now - switch_started_}});
      history_->mark("mode", "now " + mode_);
      if (controller_) controller_->switch_done(mode_ == "latency" ? policy::FleetMode::kLatency : policy::FleetMode::kThroughput, now - switch_started_);
    }
  }
  core_->dispatch();
}

// Each worker's /metrics gives the dashboard its KV use, queue lengths and GPUs, and the
// router which replicas share a GPU.
void Gateway::poll_worker_metrics() {
  const Fleet& fleet = core_->fleet();
  for (size_t i = 0; i < fleet.size(); ++i) {
    const ReplicaInfo& r = fleet.info(i);
    if (r.phase != ReplicaPhase::kReady) {
      gpu_table_.forget(r.id);
      continue;
    }
    UpstreamRequest req;
    req.host = r.host;
    req.port = r.port;
    req.target = "/metrics";
    fetch(core_strand_, req, [this, i, id = r.id, boot = r.boot_id](int status, std::string body) {
      if (status != 200) return;
      WorkerScrape w = parse_worker_metrics(body);
      core_->fleet().set_worker_stats(i, boot, w);
      std::vector<std::string> uuids;
      for (const GpuSample& g : w.gpus) uuids.push_back(g.uuid);
      core_->fleet().set_worker_gpus(i, boot, std::move(uuids));
      if (i < core_->fleet().size() && core_->fleet().info(i).boot_id == boot) gpu_table_.update(id, std::move(w.gpus), core_->clock()->now_s());
    });
  }
  // The optional mode controller watches the same 2 s rhythm: the load (requests in
  // flight plus queued), the fleet's output rate since the last poll and one user's
  // decode speed are what it learns each mode's numbers from (policy/mode_controller.h).
  const double now_s = core_->clock()->now_s();
  const int64_t tokens = core_->counters().output_tokens;
  if (controller_ && !switching_ && controller_polled_s_ > 0 && now_s > controller_polled_s_) {
    policy::ModeSample sample;
    sample.queued = static_cast<double>(core_->queue().size());
    sample.load = static_cast<double>(core_->in_flight()) + sample.queued;
    sample.aggregate_tok_s = static_cast<double>(tokens - controller_tokens_) / (now_s - controller_polled_s_);
    const double itl = core_->itl().percentile(0.5);
    sample.user_tok_s = itl > 0 ? 1 / itl : 0;
    if (auto want = controller_->observe(sample)) {
      const std::string name = policy::fleet_mode_name(*want);
      if (config_.modes.count(name) && name != mode_) {
        log_line("mode controller: load " + std::to_string(sample.load) + " → " + name + " (" + controller_->reason() + ")");
        controller_->switched(*want);
        switch_mode(name);
      }
    }
  }
  controller_polled_s_ = now_s;
  controller_tokens_ = tokens;
  metrics_timer_.expires_after(std::chrono::seconds(2));
  metrics_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) poll_worker_metrics();
  });
}

// Drain: /ready answers 503 at once and new API requests get 503 (the listeners stay
// open, so a load balancer sees the refusal rather than a refused connection); queued
// requests are refused; requests in flight finish, and one whose worker fails meanwhile
// continues on another replica (the core is not paused). Once none is open, or the
// grace is over, the listeners and workers stop and the process exits.
void Gateway::shutdown(int signal) {
  if (shutting_down_.exchange(true)) return;
  log_line("signal " + std::to_string(signal) + ": draining");
  boost::asio::post(core_strand_, [this] {
    // Queued requests have no worker coming for them soon: refuse them now.
    core_->reject_queued(ApiError::unavailable("the gateway is shutting down", "shutting_down"));
    metrics_timer_.cancel();
    history_timer_.cancel();
    auto deadline = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                    std::chrono::duration<double>(config_.shutdown.drain_grace_s)));
    auto finish = [this] {
      log_line("drained; stopping the workers");
      const ApiError closing = ApiError::unavailable("the gateway is shutting down", "shutting_down");
      core_->close(closing);
      front_->stop();
      if (admin_) admin_->stop();
      for (auto& ex : event_subscribers_) ex->finish();
      event_subscribers_.clear();
      supervisor_->stop_all(std::chrono::milliseconds(static_cast<int64_t>(config_.shutdown.worker_stop_grace_s * 1000)), [this, closing] {
        core_->close(closing);
        front_->close_all();
        if (admin_) admin_->close_all();
        ioc_.stop();
      });
    };
    auto poll = std::make_shared<std::function<void()>>();
    // The pending wait holds the poll; the poll holds itself only weakly (no cycle to leak).
    *poll = [this, deadline, finish, weak = std::weak_ptr<std::function<void()>>(poll)] {
      if (ctx_->open_requests.load() == 0 || std::chrono::steady_clock::now() > *deadline) return finish();
      drain_timer_.expires_after(std::chrono::milliseconds(50));
      drain_timer_.async_wait([poll = weak.lock()](boost::system::error_code ec) {
        if (!ec && poll) (*poll)();
      });
    };
    (*poll)();
  });
}

int Gateway::run() {
  http::Router front_router;
  add_front_routes(front_router);
  // One listener serves both only when both addresses name the same fixed port.
  const bool shared_listener = config_.admin_listen == config_.listen && split_host_port(config_.listen).second != 0;
  if (shared_listener) {
    // The admin routes then answer on the API's address: fine on loopback, a hole
    // anywhere else unless the admin key guards them (FleetConfig refuses that already;
    // checked again here, where the listeners are made).
    if (!is_loopback_host(split_host_port(config_.listen).first) && config_.admin_key.empty()) {
      log_line("listen and admin_listen are both " + config_.listen +
               ", which is not a loopback address, and no admin_key is set: refusing to serve the admin routes to the network");
      return 1;
    }
    log_line("warning: listen and admin_listen are both " + config_.listen + "; the admin routes share the API listener");
  }
  if (shared_listener) add_admin_routes(front_router);
  front_ = std::make_unique<http::HttpServer>(ioc_, server_options(config_, config_.listen), std::move(front_router));
  if (std::string err = front_->start(); !err.empty()) {
    log_line("cannot listen on " + config_.listen + ": " + err);
    return 1;
  }
  if (!shared_listener) {
    http::Router admin_router;
    add_admin_routes(admin_router);
    admin_ = std::make_unique<http::HttpServer>(ioc_, server_options(config_, config_.admin_listen), std::move(admin_router));
    if (std::string err = admin_->start(); !err.empty()) {
      log_line("cannot listen on " + config_.admin_listen + ": " + err);
      return 1;
    }
  }
  http::register_server_metrics(metrics_, *front_, "api");
  if (admin_) http::register_server_metrics(metrics_, *admin_, "admin");
  const std::string host = split_host_port(config_.listen).first;
  std::printf("switchyard-gateway listening on http://%s:%u\n", host.c_str(), front_->port());
  if (admin_) std::printf("switchyard-gateway admin on http://%s:%u\n", split_host_port(config_.admin_listen).first.c_str(), admin_->port());
  std::fflush(stdout);

  boost::asio::post(core_strand_, [this] {
    mode_ = config_.default_mode;
    if (const ModeControllerConfig& m = config_.mode_controller; m.enabled && config_.modes.count("throughput") && config_.modes.count("latency"))
      controller_ = std::make_unique<policy::ModeController>(
          policy::ModeControllerOptions{m.to_throughput_above, m.to_latency_below, m.sustain_s, m.min_dwell_s, m.min_gain, m.horizon_s,
                                        m.default_switch_s},
          clock_, mode_ == "latency" ? policy::FleetMode::kLatency : policy::FleetMode::kThroughput);
    core_->fleet().reset(static_cast<size_t>(config_.modes.at(mode_).replicas));
    supervisor_->start(config_.modes.at(mode_));
    poll_worker_metrics();
    record_history();
  });
  signals_.async_wait([this](boost::system::error_code ec, int sig) {
    if (!ec) shutdown(sig);
  });
  const unsigned n = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n; ++i) threads.emplace_back([this] { ioc_.run(); });
  ioc_.run();
  for (auto& t : threads) t.join();
  log_line("stopped");
  return 0;
}

}  // namespace sy::gateway
