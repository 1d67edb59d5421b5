// POST /v1/completions and /v1/chat/completions: parse and validate on the HTTP
// thread, render the chat template and tokenize there, submit to the engine, and turn
// the engine's events into OpenAI responses (one body, or SSE chunks then [DONE]).
#include <boost/asio/post.hpp>

#include "common/jinja/error.h"
#include "common/utf8.h"
#include "worker/server/routes.h"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;

// A token's text and raw bytes as the logprobs shapes want them.
void token_strings(const Tokenizer& tok, int32_t id, std::string& text, std::string& bytes) {
  bytes.clear();
  tok.append_token_bytes(id, false, bytes);
  std::string storage;
  text = std::string(valid_utf8_view(bytes, storage));
}

// Receives one request's events on the engine thread and hands them to the connection's
// strand, where they become the response.
class OpenAiSink : public RequestSink, public std::enable_shared_from_this<OpenAiSink> {
 public:
  OpenAiSink(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex,
             ResponseHeader header, bool stream, bool include_usage, bool logprobs,
             Clock::time_point arrived)
      : s_(std::move(s)),
        ex_(std::move(ex)),
        header_(std::move(header)),
        stream_(stream),
        include_usage_(include_usage),
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

 private:
  void tokens(std::vector<TokenEvent> tokens) {
    std::vector<TokenLogprob> lps;
    std::string text;
    for (const TokenEvent& t : tokens) {
      if (logprobs_) lps.push_back(to_logprob(t));
      text += t.text;
      offset_ += static_cast<int32_t>(t.text.size());
    }
    if (!stream_) {
      text_ += text;
      for (auto& lp : lps) all_logprobs_.push_back(std::move(lp));
      return;
    }
    ex_->write(delta_chunk(header_, text, logprobs_ ? &lps : nullptr, "", include_usage_));
  }

  TokenLogprob to_logprob(const TokenEvent& t) {
    const Tokenizer& tok = s_->engine.tokenizer();
    TokenLogprob lp;
    token_strings(tok, t.id, lp.token, lp.bytes);
    lp.logprob = t.logprob;
    lp.text_offset = offset_;
    for (const auto& [id, v] : t.top_logprobs) {
      TopLogprob top;
      token_strings(tok, id, top.token, top.bytes);
      top.logprob = v;
      lp.top.push_back(std::move(top));
    }
    return lp;
  }

  void finish(FinishEvent f) {
    s_->release_id(header_.id);
    s_->e2e->observe(std::chrono::duration<double>(Clock::now() - arrived_).count());
    const Usage usage{f.prompt_tokens, f.completion_tokens, f.cached_tokens};
    const bool clean = f.reason == FinishReason::kStop || f.reason == FinishReason::kLength;
    if (!clean) {
      // An abort reaches a client only when the worker is shutting down (a client that
      // left has no one to tell); an engine error is ours, not the request's.
      const ApiError e =
          f.reason == FinishReason::kAbort
              ? ApiError::unavailable("the request was aborted: the worker is shutting down",
                                      "aborted")
              : ApiError::internal(f.error.empty() ? "generation failed" : f.error);
      if (!stream_) return ex_->respond_error(e);
      ex_->write(sse_error(e));  // never a clean [DONE] after a truncation
      return ex_->finish();
    }
    const char* reason = finish_reason_name(f.reason);
    if (!stream_) {
      text_ += f.text;
      return ex_->respond_json(
          http::Status::ok,
          completion_response(header_, text_, reason, logprobs_ ? &all_logprobs_ : nullptr, usage));
    }
    const std::vector<TokenLogprob> none;
    std::string out =
        delta_chunk(header_, f.text, logprobs_ ? &none : nullptr, reason, include_usage_);
    if (include_usage_) out += usage_chunk(header_, usage);
    out += kSseDone;
    ex_->write(std::move(out));
    ex_->finish();
  }

  std::shared_ptr<WorkerServer::Shared> s_;
  std::shared_ptr<http::Exchange> ex_;
  const ResponseHeader header_;
  const bool stream_, include_usage_, logprobs_;
  const Clock::time_point arrived_;
  int32_t offset_ = 0;  // bytes of text so far (completions' text_offset)
  std::string text_;    // non-streaming: the whole text
  std::vector<TokenLogprob> all_logprobs_;
};

// The chat's prompt ids: the model's template over the messages, then the tokenizer
// (the rendered text already holds the special tokens the template wants).
std::optional<ApiError> chat_prompt_ids(const WorkerServer::Shared& s, const OpenAiRequest& req,
                                        std::vector<int32_t>& ids) {
  if (!s.chat_template)
    return ApiError::bad_request("this model has no chat template; use /v1/completions",
                                 "messages");
  std::string text;
  try {
    text = s.chat_template->render(req.messages, req.add_generation_prompt, req.template_kwargs);
  } catch (const std::invalid_argument& e) {
    return ApiError::bad_request(e.what(), "messages");
  } catch (const jinja::TemplateError& e) {
    // The template refusing this conversation (raise_exception) or failing on what it
    // was given (a missing field, a limit) is the request's fault; the template parsed
    // and rendered at startup.
    if (e.kind() != jinja::TemplateError::Kind::kSyntax)
      return ApiError::bad_request(
          "the chat template cannot render these messages: " + std::string(e.what()), "messages");
    return ApiError::internal(e.what());
  }
  ids = s.engine.tokenizer().encode(text, false);
  return std::nullopt;
}

bool served(const WorkerServer::Shared& s, const std::string& model) {
  const auto& names = s.options.model_names;
  return std::find(names.begin(), names.end(), model) != names.end();
}

}  // namespace

void handle_openai(std::shared_ptr<WorkerServer::Shared> s, ApiKind kind,
                   std::shared_ptr<http::Exchange> ex) {
  const auto arrived = Clock::now();
  const bool chat = kind == ApiKind::kChatCompletion;
  s->requests_total[chat ? WorkerServer::Shared::kChat : WorkerServer::Shared::kCompletions]->inc();
  OpenAiRequest req;
  const std::string& body = ex->request().body();
  if (auto e = chat ? parse_chat_request(body, req) : parse_completion_request(body, req))
    return ex->respond_error(*e);
  if (!req.model.empty() && !served(*s, req.model))
    return ex->respond_error(ApiError::model_not_found(req.model));
  int32_t priority = kPriorityStandard;
  if (req.priority) {
    priority = *req.priority;  // the body wins over the header
  } else if (auto h = ex->request().find("X-Priority"); h != ex->request().end()) {
    if (auto e =
            parse_priority_header(std::string_view(h->value().data(), h->value().size()), priority))
      return ex->respond_error(*e);
  }
  if (!s->admit(*ex)) return;

  std::vector<int32_t> ids;
  if (chat) {
    if (auto e = chat_prompt_ids(*s, req, ids)) return ex->respond_error(*e);
  } else {
    ids = req.prompt_is_ids ? std::move(req.prompt_ids)
                            : s->engine.tokenizer().encode(req.prompt, true);
  }
  if (auto e = check_prompt(ids, s->limits, req)) return ex->respond_error(*e);

  ResponseHeader header{kind, s->new_request_id(chat ? "chatcmpl-" : "cmpl-"),
                        req.model.empty() ? s->options.model_names.at(0) : req.model, unix_now()};
  s->claim_id(header.id);
  const bool logprobs = req.sampling.logprobs >= 0;
  auto sink =
      std::make_shared<OpenAiSink>(s, ex, header, req.stream, req.include_usage, logprobs, arrived);
  if (req.stream) {
    ex->start_stream();
    if (chat) ex->write(role_chunk(header, req.include_usage));
  }
  ex->on_cancel([s, id = header.id] { s->engine.cancel(id); });
  EngineRequest er;
  er.id = header.id;
  er.prompt_ids = std::move(ids);
  er.sampling = req.sampling;
  er.priority = priority;
  er.sink = std::move(sink);
  s->engine.submit(std::move(er));
}

}  // namespace sy
