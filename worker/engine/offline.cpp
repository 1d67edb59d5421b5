#include "worker/engine/offline.h"

#include <chrono>
#include <memory>
#include <utility>

#include "common/check.h"

namespace sy {
namespace {

// Collects one request's events. Offline, the engine calls it on the caller's thread.
class CompletionSink : public RequestSink {
 public:
  explicit CompletionSink(Completion& out) : out_(out) {}
  void on_tokens(std::vector<TokenEvent> tokens) override {
    for (TokenEvent& t : tokens) {
      out_.token_ids.push_back(t.id);
      out_.text += t.text;
    }
  }
  void on_finish(FinishEvent finish) override {
    out_.text += finish.text;
    out_.finish = std::move(finish);
    finished = true;
  }
  bool finished = false;

 private:
  Completion& out_;
};

}  // namespace

EngineRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  EngineRequest r;
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  return r;
}

std::vector<Completion> run_offline(Engine& engine, std::vector<EngineRequest> requests, std::vector<double>* step_seconds) {
  std::vector<Completion> out(requests.size());
  std::vector<std::shared_ptr<CompletionSink>> sinks;
  for (size_t i = 0; i < requests.size(); ++i) {
    EngineRequest& r = requests[i];
    if (r.id.empty()) r.id = "offline-" + std::to_string(i);
    sinks.push_back(std::make_shared<CompletionSink>(out[i]));
    r.sink = sinks.back();
    engine.submit(std::move(r));
  }
  if (step_seconds) {
    for (;;) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!engine.run_step()) break;
      step_seconds->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  engine.run_until_idle();
  for (const auto& s : sinks) SY_CHECK_MSG(s->finished, "an offline request did not finish");
  return out;
}

}  // namespace sy
