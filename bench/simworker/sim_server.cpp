#include "bench/simworker/sim_server.h"

#include <unistd.h>

#include "common/http/openai_intake.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/prompt.h"
#include "policy/block_hash.h"

namespace sy::sim {
namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

SimServer::SimServer(SimEngine& engine, const Tokenizer& tokenizer, std::shared_ptr<const ChatTemplate> chat_template,
                     const TokenSource& tokens, SimTiming timing, SimServerOptions options)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_template_(std::move(chat_template)),
      options_(std::move(options)),
      series_(register_worker_metrics(metrics_, engine.stats(), [this] { return ready(); })),
      ctx_{engine, tokenizer, tokens, series_, timing},
      kv_streams_(engine.kv_events()),
      ready_at_(std::chrono::steady_clock::now() + options_.ready_delay),
      started_at_(unix_seconds()) {}

bool SimServer::ready() const { return !stopping_.load() && std::chrono::steady_clock::now() >= ready_at_; }

http::Router SimServer::router() {
  http::Router r;
  r.add(http::Verb::post, "/v1/completions",
        [this](std::shared_ptr<http::Exchange> ex) { handle_openai(ApiKind::kCompletion, std::move(ex)); });
  r.add(http::Verb::post, "/v1/chat/completions",
        [this](std::shared_ptr<http::Exchange> ex) { handle_openai(ApiKind::kChatCompletion, std::move(ex)); });
  r.add(http::Verb::post, "/internal/generate", [this](std::shared_ptr<http::Exchange> ex) { handle_generate(std::move(ex)); });
  r.add(http::Verb::get, "/internal/kv-events", [this](std::shared_ptr<http::Exchange> ex) {
    series_.requests_total[kRouteKvEvents]->inc();
    kv_streams_.serve(std::move(ex));
  });
  r.add(http::Verb::get, "/v1/models", [this](std::shared_ptr<http::Exchange> ex) {
    ex->respond_json(http::Status::ok, models_list_json({options_.model_name}, started_at_, options_.limits.context_length));
  });
  r.add(http::Verb::get, "/health", [](std::shared_ptr<http::Exchange> ex) { ex->respond_json(http::Status::ok, R"({"status":"ok"})"); });
  r.add(http::Verb::get, "/ready", [this](std::shared_ptr<http::Exchange> ex) { handle_ready(std::move(ex)); });
  r.add(http::Verb::get, "/metrics", [this](std::shared_ptr<http::Exchange> ex) {
    ex->respond(http::Status::ok, MetricsRegistry::kContentType, metrics_.expose());
  });
  return r;
}

void SimServer::shutdown() {
  stopping_.store(true);
  kv_streams_.close_all();
  engine_.abort_all();
}

void SimServer::handle_ready(std::shared_ptr<http::Exchange> ex) {
  WorkerReadiness r;
  r.ready = ready();
  r.boot_id = options_.boot_id;
  r.pid = ::getpid();
  r.block_size = engine_.options().block_size;
  r.max_num_seqs = engine_.options().max_num_seqs;
  r.model = options_.model_name;
  r.model_fingerprint = options_.model_fingerprint;
  r.max_model_len = options_.limits.context_length;
  r.kv_blocks_total = engine_.options().kv_blocks;
  ex->respond_json(r.ready ? http::Status::ok : http::Status::service_unavailable, worker_readiness_json(r));
}

std::optional<ApiError> SimServer::admit() const {
  if (stopping_.load()) return ApiError::unavailable("the worker is shutting down", "shutting_down");
  if (!ready()) return ApiError::unavailable("the worker is not ready yet", "not_ready");
  return std::nullopt;
}

void SimServer::handle_generate(std::shared_ptr<http::Exchange> ex) {
  const auto arrived = SimRequest::Clock::now();
  series_.requests_total[kRouteGenerate]->inc();
  InternalGenerateRequest req;
  if (auto e = parse_internal_generate(ex->request().body(), req)) return ex->respond_error(*e);
  if (auto e = admit()) return ex->respond_error(*e);
  if (auto e = check_internal_generate(req, options_.limits)) return ex->respond_error(*e);
  if (!req.sampling.stop.empty()) return ex->respond_error(ApiError::bad_request("stop strings are not simulated", "stop"));
  if (run(ex, internal_output(ex), std::move(req), arrived)) ex->start_stream();
}

void SimServer::handle_openai(ApiKind kind, std::shared_ptr<http::Exchange> ex) {
  const auto arrived = SimRequest::Clock::now();
  const bool chat = kind == ApiKind::kChatCompletion;
  series_.requests_total[chat ? kRouteChat : kRouteCompletions]->inc();
  InternalGenerateRequest ig;
  OpenAiRequest req;
  if (auto e = http::read_openai_request(*ex, kind, {options_.model_name}, req, ig.priority)) return ex->respond_error(*e);
  if (auto e = admit()) return ex->respond_error(*e);
  if (auto e = prompt_ids_for(req, tokenizer_, chat_template_.get(), ig.prompt_ids)) return ex->respond_error(*e);
  if (auto e = check_prompt(ig.prompt_ids, options_.limits, req)) return ex->respond_error(*e);
  if (!req.sampling.stop.empty()) return ex->respond_error(ApiError::bad_request("stop strings are not simulated", "stop"));
  ResponseHeader header{kind, http::new_response_id(chat ? "chatcmpl-" : "cmpl-"), options_.model_name, unix_seconds()};
  ig.request_id = header.id;
  ig.sampling = req.sampling;
  auto responder = std::make_unique<http::OpenAiResponder>(ex, std::move(header), tokenizer_, req.stream, req.include_usage,
                                                           req.sampling.logprobs >= 0);
  if (req.stream) responder->begin();
  run(ex, openai_output(ex, std::move(responder)), std::move(ig), arrived);
}

// Events are posted to the exchange's strand, so they follow what the handler sends.
bool SimServer::run(std::shared_ptr<http::Exchange> ex, std::unique_ptr<SimOutput> out, InternalGenerateRequest req,
                    SimRequest::Clock::time_point arrived) {
  // Greedy output is a function of the prompt alone, as a model's argmax is (so a resumed
  // greedy request continues where another replica stopped); sampled output of the seed.
  const uint64_t seed = req.sampling.greedy() ? policy::chain_block_hash(0, req.prompt_ids)
                        : req.sampling.seed   ? *req.sampling.seed
                                              : engine_.draw_seed();
  const std::string id = req.request_id;
  auto r = std::make_shared<SimRequest>(ctx_, ex, std::move(out), std::move(req), seed, engine_.draw_seed(), arrived);
  if (!engine_.submit(r)) {
    ex->respond_error(
        ApiError{409, "invalid_request_error", "request_id '" + id + "' is already running", "request_id", "duplicate_request_id"});
    return false;
  }
  ex->on_cancel([r] { r->cancel(); });
  return true;
}

}  // namespace sy::sim
