// The serving engine: one engine thread owns the scheduler, the KV cache manager and
// every live request; other threads talk to it only through submit() and cancel(),
// which enqueue, and through the read-only stats and event hub.
//
// Each step the engine drains its inbox, asks the scheduler for a batch plan (running
// decodes first, then prefill chunks by priority and arrival within the prefill budget),
// runs it on the backend, samples, detokenizes, checks stop conditions and reports to
// each request's sink.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "worker/backend/backend.h"
#include "common/kv_cache/kv_events.h"
#include "common/worker_metrics.h"
#include "worker/engine/request.h"

namespace sy {

struct EngineOptions {
  int32_t max_num_seqs = 16;   // running sequences at most
  int32_t prefill_chunk = 256;  // prompt tokens per step, over all sequences (decodes extra)
  uint64_t model_fingerprint = 0;  // h_{-1} of the prefix block hashes
  bool prefix_caching = true;
  // Where the backend samples on the device, rows without penalties or logprobs are
  // sampled there; off, every row is sampled on the host from fp32 logits (the path
  // penalties and logprobs always take). Tests and bench/ compare the two.
  bool device_sampling = true;
};

// Latency observations (seconds), delivered to whoever records histograms.
class LatencyObserver {
 public:
  virtual ~LatencyObserver() = default;
  virtual void observe_ttft(double seconds) = 0;
  virtual void observe_itl(double seconds) = 0;
};

class Engine {
 public:
  // Engines may share a backend (tests and benchmarks compare options on one loaded
  // model) when they run one at a time, offline, without prefix caching: each owns every
  // KV block while it steps, and no block's contents outlive a finished request.
  Engine(std::shared_ptr<Backend> backend, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options);
  ~Engine();  // stops the thread; live requests finish with kAbort

  // Called once, on the engine thread, when a step fails on the device (the backend
  // threw: a CUDA error, an exhausted device). By then every live and queued request has
  // finished with kError naming the failure, ready() is false and later submissions
  // finish with kError at once: the device state is unknown, so the engine does not step
  // again. `serve` logs it and exits non-zero, so that a supervisor restarts the worker
  // and the gateway continues the streams elsewhere. Set before start().
  void set_fatal_handler(std::function<void(const std::string& what)> handler) { on_fatal_ = std::move(handler); }
  // The failure that stopped the engine; empty while it runs.
  std::string failure() const;

  // Starts the engine thread; it runs one warm-up step, then ready() turns true.
  void start();
  void stop();
  bool ready() const { return ready_.load(); }

  // Any thread. Requests are validated by the caller (ids in the vocabulary, prompt +
  // max_tokens within the context); the engine still refuses what it cannot run with
  // an kError finish.
  void submit(EngineRequest request);
  // Any thread. The request finishes with kAbort and its blocks are freed at the start
  // of the next step. Unknown ids are ignored.
  void cancel(const std::string& request_id);

  // Offline use, on the calling thread of an engine that was never start()ed: the CLI's
  // generate and eval, tests and benchmarks run the serving path without a thread or HTTP.
  // run_step() admits what was submitted or cancelled and runs one step; false when no
  // step ran. A device failure ends every request with kError, as on the engine thread.
  bool run_step();
  // run_step() until every submitted request has finished.
  void run_until_idle();
  // Logits of every position of `prompt` ([prompt.size(), vocab], row-major), or of its
  // last position only ([vocab]): the prompt's prefill in steps of at most
  // options().prefill_chunk tokens, outside the scheduler, on blocks taken from the KV
  // cache and given back. What eval and the fixture tests compare with reference logits,
  // which no request reports. Throws std::invalid_argument for a prompt the model or the
  // cache cannot take.
  std::vector<float> prompt_logits(const std::vector<int32_t>& prompt, bool all_positions);

  const WorkerStats& stats() const { return stats_; }
  KvEventHub& kv_events() { return kv_events_; }
  void set_latency_observer(LatencyObserver* o) { latency_ = o; }

  const ModelConfig& config() const { return backend_->config(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int32_t block_size() const { return backend_->block_size(); }
  int32_t num_kv_blocks() const { return backend_->num_kv_blocks(); }
  const EngineOptions& options() const { return options_; }
  // Steps run so far (tests count steps, not seconds).
  int64_t steps() const { return stats_.steps_total.load(); }

 private:
  class Impl;
  void run();
  // Admits what other threads queued, then runs one step. kFailed: the device failed and
  // fail_fatally has reported it; the engine must not step again.
  enum class StepResult { kRan, kNothingToRun, kFailed };
  StepResult admit_and_step();

  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  EngineOptions options_;
  WorkerStats stats_;  // for /metrics, updated by the engine thread
  KvEventHub kv_events_;
  LatencyObserver* latency_ = nullptr;
  std::unique_ptr<Impl> impl_;

  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::deque<EngineRequest> submitted_;
  std::vector<std::string> cancelled_;
  bool stopping_ = false;
  std::atomic<bool> ready_{false};
  std::string failure_;  // under inbox_mu_
  std::function<void(const std::string&)> on_fatal_;
  std::thread thread_;

  // A device step threw: fail everything, refuse what comes, tell the handler.
  void fail_fatally(const std::string& what);
};

}  // namespace sy
