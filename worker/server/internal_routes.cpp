// The gateway's endpoints: POST /internal/generate (token ids in; token ids and their
// text out, as SSE) and GET /internal/kv-events (the prefix cache's hashes, as SSE).
// Wire formats: common/protocol/internal_api.h and docs/PROTOCOL.md.
#include <boost/asio/post.hpp>

#include "common/constrain/tool_constraint.h"
#include "common/protocol/internal_api.h"
#include "worker/server/routes.h"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;

class InternalSink : public RequestSink, public std::enable_shared_from_this<InternalSink> {
 public:
  InternalSink(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex,
               std::string id, int32_t first_index, bool logprobs, Clock::time_point arrived)
      : s_(std::move(s)),
        ex_(std::move(ex)),
        id_(std::move(id)),
        index_(first_index),
        logprobs_(logprobs),
        arrived_(arrived) {}

  void on_tokens(std::vector<TokenEvent> tokens) override {
    boost::asio::post(ex_->executor(),
                      [self = shared_from_this(), t = std::move(tokens)]() mutable {
                        self->tokens(std::move(t));
                      });
  }
  void on_finish(FinishEvent f) override {
    boost::asio::post(ex_->executor(), [self = shared_from_this(), f = std::move(f)]() mutable {
      self->finish(std::move(f));
    });
  }
  void on_preempted(int32_t recompute_tokens) override {
    boost::asio::post(ex_->executor(), [self = shared_from_this(), recompute_tokens] {
      self->ex_->write(internal_preempted_event({recompute_tokens}));
    });
  }

 private:
  void tokens(std::vector<TokenEvent> tokens) {
    InternalTokens ev;
    ev.index = index_;
    for (auto& t : tokens) {
      ev.ids.push_back(t.id);
      ev.text += t.text;
      if (logprobs_)
        ev.logprobs.push_back(InternalTokenLogprob{t.logprob, std::move(t.top_logprobs)});
    }
    index_ += static_cast<int32_t>(ev.ids.size());
    ex_->write(internal_tokens_event(ev));
  }

  void finish(FinishEvent f) {
    s_->release_id(id_);
    s_->e2e->observe(std::chrono::duration<double>(Clock::now() - arrived_).count());
    if (f.reason == FinishReason::kStop || f.reason == FinishReason::kLength) {
      InternalFinish fin{finish_reason_name(f.reason), std::move(f.text), std::move(f.matched_stop),
                         Usage{f.prompt_tokens, f.completion_tokens, f.cached_tokens}};
      ex_->write(internal_finish_event(fin));
    } else {
      ex_->write(
          sse_error(f.reason == FinishReason::kAbort
                        ? ApiError::unavailable(
                              "the request was aborted: the worker is shutting down", "aborted")
                        : ApiError::internal(f.error.empty() ? "generation failed" : f.error)));
    }
    ex_->finish();
  }

  std::shared_ptr<WorkerServer::Shared> s_;
  std::shared_ptr<http::Exchange> ex_;
  const std::string id_;
  int32_t index_;  // position of the next id among all generated ones (resume ids first)
  const bool logprobs_;
  const Clock::time_point arrived_;
};

}  // namespace

void handle_internal_generate(std::shared_ptr<WorkerServer::Shared> s,
                              std::shared_ptr<http::Exchange> ex) {
  const auto arrived = Clock::now();
  s->requests_total[kRouteGenerate]->inc();
  InternalGenerateRequest req;
  if (auto e = parse_internal_generate(ex->request().body(), req)) return ex->respond_error(*e);
  if (!s->admit(*ex)) return;
  if (auto e = check_internal_generate(req, s->limits)) return ex->respond_error(*e);
  std::shared_ptr<const constrain::ToolGrammar> grammar;
  if (auto e = constrain::compile_constraint(req.constraint, grammar)) return ex->respond_error(*e);
  if (!s->claim_id(req.request_id))
    return ex->respond_error(ApiError{409, "invalid_request_error",
                                      "request_id '" + echo_input(req.request_id) + "' is already running",
                                      "request_id", "duplicate_request_id"});
  const bool logprobs = req.sampling.logprobs >= 0;
  auto sink = std::make_shared<InternalSink>(
      s, ex, req.request_id, static_cast<int32_t>(req.resume_ids.size()), logprobs, arrived);
  ex->start_stream();
  ex->on_cancel([s, id = req.request_id] { s->engine.cancel(id); });
  EngineRequest er;
  er.id = req.request_id;
  er.prompt_ids = std::move(req.prompt_ids);
  er.resume_ids = std::move(req.resume_ids);
  er.sampling = std::move(req.sampling);
  er.priority = req.priority;
  er.grammar = std::move(grammar);
  er.sink = std::move(sink);
  s->engine.submit(std::move(er));
}

void handle_kv_events(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex) {
  s->requests_total[kRouteKvEvents]->inc();
  s->kv_streams.serve(std::move(ex));
}

}  // namespace sy
