#include "bench/simworker/sim_output.h"

namespace sy::sim {
namespace {

// No model, no distribution: the simulation is certain of its choice.
InternalTokenLogprob certain(int32_t id) { return InternalTokenLogprob{0.0f, {{id, 0.0f}}}; }

class InternalOutput : public SimOutput {
 public:
  explicit InternalOutput(std::shared_ptr<http::Exchange> ex) : ex_(std::move(ex)) {}
  bool token(int32_t index, int32_t id, std::string text, bool logprobs) override {
    InternalTokens ev;
    ev.index = index;
    ev.ids = {id};
    ev.text = std::move(text);
    if (logprobs) ev.logprobs.push_back(certain(id));
    return ex_->write(internal_tokens_event(ev));
  }
  void finish(const InternalFinish& f) override {
    ex_->write(internal_finish_event(f));
    ex_->finish();
  }
  void abort(const ApiError& e) override {
    ex_->write(sse_error(e));
    ex_->finish();
  }

 private:
  std::shared_ptr<http::Exchange> ex_;
};

class OpenAiOutput : public SimOutput {
 public:
  OpenAiOutput(std::shared_ptr<http::Exchange> ex, std::unique_ptr<http::OpenAiResponder> r)
      : ex_(std::move(ex)), responder_(std::move(r)) {}
  bool token(int32_t, int32_t id, std::string text, bool logprobs) override {
    const InternalTokenLogprob lp = logprobs ? certain(id) : InternalTokenLogprob{};
    responder_->tokens({http::ResponderToken{id, std::move(text), lp.logprob, lp.top}});
    return !ex_->cancelled();
  }
  void finish(const InternalFinish& f) override { responder_->finish(f.finish_reason, f.text, f.usage); }
  void abort(const ApiError& e) override { responder_->fail(e); }

 private:
  std::shared_ptr<http::Exchange> ex_;
  std::unique_ptr<http::OpenAiResponder> responder_;
};

}  // namespace

std::unique_ptr<SimOutput> internal_output(std::shared_ptr<http::Exchange> ex) {
  return std::make_unique<InternalOutput>(std::move(ex));
}

std::unique_ptr<SimOutput> openai_output(std::shared_ptr<http::Exchange> ex, std::unique_ptr<http::OpenAiResponder> responder) {
  return std::make_unique<OpenAiOutput>(std::move(ex), std::move(responder));
}

}  // namespace sy::sim
