// POST /v1/completions and /v1/chat/completions: parse and validate on the HTTP
// thread, render the chat template and tokenize there, submit to the engine, and turn
// the engine's events into OpenAI responses (one body, or SSE chunks then [DONE]).
#include <boost/asio/post.hpp>

#include "common/constrain/tool_constraint.h"
#include "common/http/openai_intake.h"
#include "common/http/openai_responder.h"
#include "common/protocol/prompt.h"
#include "common/utf8.h"
#include "worker/server/routes.h"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;

// Receives one request's events on the engine thread and hands them to the connection's
// strand, where the shared OpenAI responder turns them into the response.
class OpenAiSink : public RequestSink, public std::enable_shared_from_this<OpenAiSink> {
 public:
  OpenAiSink(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex, ResponseHeader header,
             const OpenAiRequest& req, Clock::time_point arrived)
      : s_(std::move(s)),
        ex_(ex),
        id_(header.id),
        responder_(std::move(ex), std::move(header), s_->engine.tokenizer(), req.stream, req.include_usage,
                   req.sampling.logprobs >= 0),
        arrived_(arrived) {}

  void begin() { responder_.begin(); }

  void on_tokens(std::vector<TokenEvent> tokens) override {
    boost::asio::post(ex_->executor(), [self = shared_from_this(), t = std::move(tokens)]() mutable {
      std::vector<http::ResponderToken> out;
      out.reserve(t.size());
      for (auto& e : t) out.push_back({e.id, std::move(e.text), e.logprob, std::move(e.top_logprobs)});
      self->responder_.tokens(out);
    });
  }
  void on_finish(FinishEvent f) override {
    boost::asio::post(ex_->executor(), [self = shared_from_this(), f = std::move(f)]() mutable { self->finish(std::move(f)); });
  }

 private:
  void finish(FinishEvent f) {
    s_->release_id(id_);
    s_->e2e->observe(std::chrono::duration<double>(Clock::now() - arrived_).count());
    if (f.reason == FinishReason::kStop || f.reason == FinishReason::kLength)
      return responder_.finish(finish_reason_name(f.reason), f.text, Usage{f.prompt_tokens, f.completion_tokens, f.cached_tokens});
    // An abort reaches a client only when the worker is shutting down (a client that
    // left has no one to tell); an engine error is ours, not the request's.
    responder_.fail(f.reason == FinishReason::kAbort ? ApiError::unavailable("the request was aborted: the worker is shutting down", "aborted")
                                                     : ApiError::internal(f.error.empty() ? "generation failed" : f.error));
  }

  std::shared_ptr<WorkerServer::Shared> s_;
  std::shared_ptr<http::Exchange> ex_;
  const std::string id_;
  http::OpenAiResponder responder_;
  const Clock::time_point arrived_;
};

}  // namespace

void handle_openai(std::shared_ptr<WorkerServer::Shared> s, ApiKind kind,
                   std::shared_ptr<http::Exchange> ex) {
  const auto arrived = Clock::now();
  const bool chat = kind == ApiKind::kChatCompletion;
  s->requests_total[chat ? kRouteChat : kRouteCompletions]->inc();
  OpenAiRequest req;
  int32_t priority = kPriorityStandard;
  if (auto e = http::read_openai_request(*ex, kind, s->options.model_names, req, priority))
    return ex->respond_error(*e);
  if (!s->admit(*ex)) return;
  if (chat) apply_default_template_kwargs(s->options.chat_template_kwargs, req);

  std::vector<int32_t> ids;
  ChatOutputSpec output;  // how the reply is read: reasoning, tool calls
  if (auto e = prompt_ids_for(req, s->engine.tokenizer(), s->chat_template.get(), ids, &output))
    return ex->respond_error(*e);
  if (auto e = check_prompt(ids, s->limits, req)) return ex->respond_error(*e);
  Json constraint;  // tool_choice "required" or a named function: the output is masked to a call
  std::shared_ptr<const constrain::ToolGrammar> grammar;
  if (auto e = constrain::tool_constraint_spec(req, output, constraint, &grammar)) return ex->respond_error(*e);

  ResponseHeader header{kind, http::new_response_id(chat ? "chatcmpl-" : "cmpl-"),
                        req.model.empty() ? s->options.model_names.at(0) : req.model, unix_now()};
  header.output = output;
  s->claim_id(header.id);
  auto sink = std::make_shared<OpenAiSink>(s, ex, header, req, arrived);
  if (req.stream) sink->begin();
  ex->on_cancel([s, id = header.id] { s->engine.cancel(id); });
  EngineRequest er;
  er.id = header.id;
  er.prompt_ids = std::move(ids);
  er.sampling = req.sampling;
  er.priority = priority;
  er.grammar = std::move(grammar);
  er.sink = std::move(sink);
  s->engine.submit(std::move(er));
}

}  // namespace sy
