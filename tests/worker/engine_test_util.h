// Helpers for tests that drive the real Engine on a fixture model.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "fixture_util.h"
#include "worker/engine/engine.h"

namespace sy::testing {

// Records everything the engine reports for one request.
class CollectingSink : public RequestSink {
 public:
  explicit CollectingSink(const Engine* engine = nullptr) : engine_(engine) {}

  void on_tokens(std::vector<TokenEvent> tokens) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (ids_.empty() && engine_) first_token_step_ = engine_->steps();
    for (auto& t : tokens) {
      ids_.push_back(t.id);
      text_ += t.text;
      events_.push_back(std::move(t));
    }
  }
  void on_preempted(int32_t recompute_tokens) override {
    std::lock_guard<std::mutex> lock(mu_);
    preempted_.push_back(recompute_tokens);
  }
  std::vector<int32_t> preempted() {
    std::lock_guard<std::mutex> lock(mu_);
    return preempted_;
  }
  void on_finish(FinishEvent f) override {
    std::lock_guard<std::mutex> lock(mu_);
    text_ += f.text;
    finish_ = std::move(f);
    cv_.notify_all();
  }

  // Waits for the finish event (fails the test after `timeout`).
  FinishEvent wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return finish_.has_value(); })) {
      ADD_FAILURE() << "request did not finish in time";
      return {};
    }
    return *finish_;
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mu_);
    return finish_.has_value();
  }
  std::vector<int32_t> ids() {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }
  std::vector<TokenEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int64_t first_token_step() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_token_step_;
  }

 private:
  const Engine* engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> ids_;
  std::vector<TokenEvent> events_;
  std::string text_;
  std::vector<int32_t> preempted_;  // recompute_tokens of each on_preempted
  std::optional<FinishEvent> finish_;
  int64_t first_token_step_ = -1;
};

}  // namespace sy::testing
