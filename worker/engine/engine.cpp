#include "worker/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "common/check.h"
#include "common/constrain/token_mask.h"
#include "worker/engine/block_allocator.h"
#include "common/kv_cache/kv_cache_manager.h"
#include "worker/engine/output_processor.h"
#include "worker/engine/sampler.h"
#include "worker/engine/scheduler.h"

namespace sy {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "?";
}

// Engine-thread state.
class Engine::Impl {
 public:
  Impl(Engine& e)
      : engine(e),
        kv(e.backend_->num_kv_blocks(), e.options_.prefix_caching, &e.kv_events_, e.backend_->num_host_kv_blocks()),
        scheduler(kv, e.backend_->block_size(), e.options_.max_num_seqs, e.options_.prefill_chunk, e.options_.model_fingerprint),
        output(*e.tokenizer_, e.backend_->config().max_context) {}

  Engine& engine;
  KvCacheManager kv;
  Scheduler scheduler;
  OutputProcessor output;
  std::unordered_map<std::string, std::unique_ptr<Sequence>> live;
  uint64_t next_arrival = 0;
  std::mt19937_64 seed_source{std::random_device{}()};
  std::vector<float> logits;
  std::vector<RowSampling> rows;
  std::vector<int32_t> ids;
  // Constrained decoding: the vocabulary index is built on the first constrained request
  // (once per engine; it reads only the tokenizer), the masker reuses its scratch.
  std::unique_ptr<constrain::VocabIndex> vocab_index;
  std::unique_ptr<constrain::TokenMasker> masker;
  std::vector<int32_t> allowed;
  std::vector<float> masked;

  constrain::TokenMasker& token_masker() {
    if (!masker) {
      vocab_index = std::make_unique<constrain::VocabIndex>(*engine.tokenizer_);
      masker = std::make_unique<constrain::TokenMasker>(*vocab_index);
    }
    return *masker;
  }

  // The tokens the grammar allows next, within the vocabulary, in `allowed` (sorted);
  // false when there is none (the grammar always leaves a byte to write, so that is a
  // bug, not an input).
  bool allowed_tokens(Sequence& s, int32_t vocab) {
    token_masker().allowed_tokens(*s.request.grammar, *s.grammar_state, allowed);
    std::erase_if(allowed, [&](int32_t id) { return id < 0 || id >= vocab; });
    std::sort(allowed.begin(), allowed.end());
    return !allowed.empty();
  }

  // The row's logits with every token not in `allowed` at -inf.
  std::span<const float> masked_row(std::span<const float> row) {
    masked.assign(row.size(), -INFINITY);
    for (int32_t id : allowed) masked[static_cast<size_t>(id)] = row[static_cast<size_t>(id)];
    return masked;
  }

  static void finish_with_error(const std::shared_ptr<RequestSink>& sink, std::string why, int32_t prompt_tokens,
                                int32_t completion_tokens) {
    FinishEvent f;
    f.reason = FinishReason::kError;
    f.error = std::move(why);
    f.prompt_tokens = prompt_tokens;
    f.completion_tokens = completion_tokens;
    if (sink) sink->on_finish(std::move(f));
  }

  // Ends a running sequence with kError (it is dropped by the caller).
  void fail_sequence(Sequence& s, std::string why) {
    finish_with_error(s.request.sink, std::move(why), s.prompt_len, s.num_generated());
  }

  void fail(EngineRequest& r, std::string why) {
    finish_with_error(r.sink, std::move(why), static_cast<int32_t>(r.prompt_ids.size()), 0);
  }

  void accept(EngineRequest r) {
    const ModelConfig& c = engine.backend_->config();
    if (!r.sink) return;
    if (r.prompt_ids.empty()) return fail(r, "empty prompt");
    if (const std::string bad = r.sampling.validate(); !bad.empty()) return fail(r, bad);
    for (const auto* ids : {&r.prompt_ids, &r.resume_ids})
      for (int32_t id : *ids)
        if (id < 0 || id >= c.vocab) return fail(r, "token id " + std::to_string(id) + " is outside the vocabulary");
    const int64_t total = static_cast<int64_t>(r.prompt_ids.size()) + std::max<int64_t>(r.sampling.max_tokens, static_cast<int64_t>(r.resume_ids.size()));
    if (total > c.max_context) return fail(r, "prompt + max_tokens exceed the model's context of " + std::to_string(c.max_context));
    if (blocks_for(total, engine.backend_->block_size()) > kv.num_blocks())
      return fail(r, "the request needs more KV blocks than the cache has");
    if (live.count(r.id)) return fail(r, "duplicate request id '" + r.id + "'");
    const uint64_t seed = r.sampling.seed ? *r.sampling.seed : seed_source();
    auto s = std::make_unique<Sequence>(std::move(r), next_arrival++, seed, *engine.tokenizer_);
    s->tokens = s->request.prompt_ids;
    s->prompt_len = static_cast<int32_t>(s->tokens.size());
    s->tokens.insert(s->tokens.end(), s->request.resume_ids.begin(), s->request.resume_ids.end());
    if (s->request.grammar) {
      s->grammar_state = s->request.grammar->initial();
      for (int32_t id : s->request.resume_ids)
        if (!token_masker().advance(*s->request.grammar, *s->grammar_state, id))
          return fail(s->request, "the resumed tokens do not follow the tool-call constraint");
    }
    output.resume(*s);
    engine.stats_.prompt_tokens_total += s->prompt_len;
    if (s->num_generated() >= s->request.sampling.max_tokens) {
      s->cached_tokens = 0;
      return output.finish(*s, FinishReason::kLength, engine.stats_);
    }
    Sequence* raw = s.get();
    live.emplace(raw->request.id, std::move(s));
    scheduler.add(raw);
  }

  void drop(Sequence* s) {
    scheduler.remove(s);
    live.erase(s->request.id);
  }

  void cancel(const std::string& id) {
    auto it = live.find(id);
    if (it == live.end()) return;
    Sequence* s = it->second.get();
    output.finish(*s, FinishReason::kAbort, engine.stats_);
    ++engine.stats_.requests_aborted_total;
    drop(s);
  }

  // One engine step; false when there was nothing to run.
  bool step() {
    take_host_tier();
    StepSchedule sched = scheduler.schedule();
    engine.stats_.preemptions_total += static_cast<int64_t>(sched.preempted.size());
    // A preempted request goes silent until its context is computed again: say so, so
    // that whoever waits on its stream (the gateway's stall watchdog) knows it is alive.
    for (Sequence* p : sched.preempted)
      if (p->request.sink) p->request.sink->on_preempted(static_cast<int32_t>(p->tokens.size()));
    if (sched.empty()) return false;
    BatchPlan plan;
    const int32_t bs = engine.backend_->block_size();
    for (const ScheduledSeq& e : sched.entries) {
      Sequence* s = e.seq;
      const std::vector<int32_t> chunk(s->tokens.begin() + s->num_computed, s->tokens.begin() + s->num_computed + e.num_tokens);
      plan.add_sequence(chunk, s->num_computed, s->blocks, bs, e.sample ? BatchPlan::Logits::kLast : BatchPlan::Logits::kNone);
    }
    plan.kv_copies = kv.take_copies();
    // Tokens are chosen on the device when the backend can and no row needs the whole
    // logits row on the host (penalties read the context; logprobs the softmax).
    bool on_device = engine.options_.device_sampling && engine.backend_->samples_on_device();
    rows.clear();
    for (const ScheduledSeq& e : sched.entries) {
      if (!e.sample) continue;
      const SamplingParams& p = e.seq->request.sampling;
      on_device = on_device && p.logprobs < 0 && p.repetition_penalty == 1.0f &&
                  p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f && !e.seq->request.grammar;
      rows.push_back({p.temperature, p.top_k, p.top_p, p.min_p,
                      sampling_uniform(e.seq->seed, e.seq->num_generated())});
    }
    if (on_device)
      engine.backend_->forward_sample(plan, rows, ids);
    else
      engine.backend_->forward(plan, logits);
    scheduler.complete(sched);
    ++engine.stats_.steps_total;
    for (const ScheduledSeq& e : sched.entries)
      if (!e.decode) engine.stats_.prefill_tokens_total += e.num_tokens;

    const int32_t vocab = engine.backend_->config().vocab;
    size_t row = 0;
    std::vector<Sequence*> finished;
    for (const ScheduledSeq& e : sched.entries) {
      if (!e.sample) continue;
      Sequence* s = e.seq;
      SampleResult r;
      if (on_device) {
        r.id = ids[row];
      } else {
        std::span<const float> row_logits(logits.data() + row * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
        const SamplingParams& p = s->request.sampling;
        const bool penalties = p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
        bool sampled = false;
        if (s->grammar_state) {
          if (!allowed_tokens(*s, vocab)) {
            ++row;
            fail_sequence(*s, "constrained decoding: no token of the vocabulary continues the tool call");
            finished.push_back(s);
            continue;
          }
          if (!penalties && allowed.size() * 4 < row_logits.size()) {
            // Few allowed tokens: the same draw over them only, without a masked copy of the row.
            r = sample_token_among(row_logits, allowed, p, sampling_uniform(s->seed, s->num_generated()));
            sampled = true;
          } else {
            row_logits = masked_row(row_logits);
          }
        }
        if (!sampled) {
          const std::span<const int32_t> context(s->tokens);
          r = sample_token(row_logits, p, s->seed, s->num_generated(), context, context.subspan(static_cast<size_t>(s->prompt_len)));
        }
      }
      ++row;
      if (s->grammar_state && !engine.tokenizer_->is_stop(r.id) &&
          !token_masker().advance(*s->request.grammar, *s->grammar_state, r.id)) {
        fail_sequence(*s, "constrained decoding: token " + std::to_string(r.id) + " does not continue the tool call");
        finished.push_back(s);
        continue;
      }
      if (output.add_token(*s, r, engine.stats_, engine.latency_)) finished.push_back(s);
    }
    for (Sequence* s : finished) drop(s);
    kv.flush_events();
    return true;
  }

  // A host tier allocated in the background is in use from the first step after it is
  // ready; one that failed leaves the engine serving without it, and says so.
  void take_host_tier() {
    try {
      if (const int32_t n = engine.backend_->take_host_tier(); n > 0) {
        kv.add_host_tier(n);
        std::fprintf(stderr, "engine: KV host tier of %d blocks in use\n", n);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "engine: serving without the KV host tier: %s\n", e.what());
    }
  }

  void update_gauges() {
    engine.stats_.requests_running = scheduler.num_running();
    engine.stats_.requests_waiting = scheduler.num_waiting();
    engine.stats_.kv_blocks_used = kv.num_used();
    engine.stats_.kv_blocks_total = kv.num_blocks();
    engine.stats_.kv_host_blocks_capacity = kv.num_host_blocks();
    engine.stats_.kv_host_blocks_saved_total = kv.host_blocks_saved();
    engine.stats_.kv_host_blocks_loaded_total = kv.host_blocks_loaded();
  }

  void abort_all() {
    while (!live.empty()) cancel(live.begin()->first);
  }

  // Every live request finishes with kError `why` (the engine will not step again).
  void fail_all(const std::string& why) {
    while (!live.empty()) {
      Sequence* s = live.begin()->second.get();
      FinishEvent f;
      f.reason = FinishReason::kError;
      f.error = why;
      f.prompt_tokens = s->prompt_len;
      f.completion_tokens = s->num_generated();
      if (s->request.sink) s->request.sink->on_finish(std::move(f));
      drop(s);
    }
  }
};

Engine::Engine(std::shared_ptr<Backend> backend, std::shared_ptr<const Tokenizer> tokenizer, EngineOptions options)
    : backend_(std::move(backend)), tokenizer_(std::move(tokenizer)), options_(options) {
  impl_ = std::make_unique<Impl>(*this);
  impl_->update_gauges();
}

Engine::~Engine() { stop(); }

void Engine::start() {
  SY_CHECK(!thread_.joinable());
  thread_ = std::thread([this] { run(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::submit(EngineRequest request) {
  std::string refused;  // the device failure that stopped the engine, if one did
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    if (failure_.empty())
      submitted_.push_back(std::move(request));
    else
      refused = failure_;
  }
  if (!refused.empty()) return impl_->fail(request, "the engine stopped after a device failure: " + refused);
  inbox_cv_.notify_all();
}

std::string Engine::failure() const {
  std::lock_guard<std::mutex> lock(inbox_mu_);
  return failure_;
}

void Engine::fail_fatally(const std::string& what) {
  std::fprintf(stderr, "engine: a device step failed: %s\n", what.c_str());
  ready_ = false;
  std::deque<EngineRequest> left;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    failure_ = what;
    left.swap(submitted_);
  }
  const std::string why = "the device failed: " + what;
  for (auto& r : left) impl_->fail(r, why);
  impl_->fail_all(why);
  impl_->update_gauges();
  if (on_fatal_) on_fatal_(what);
}

void Engine::cancel(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    cancelled_.push_back(request_id);
  }
  inbox_cv_.notify_all();
}

Engine::StepResult Engine::admit_and_step() {
  std::deque<EngineRequest> submitted;
  std::vector<std::string> cancelled;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    submitted.swap(submitted_);
    cancelled.swap(cancelled_);
  }
  for (auto& r : submitted) impl_->accept(std::move(r));
  for (const auto& id : cancelled) impl_->cancel(id);
  StepResult result;
  try {
    result = impl_->step() ? StepResult::kRan : StepResult::kNothingToRun;
  } catch (const std::exception& e) {
    fail_fatally(e.what());
    return StepResult::kFailed;
  }
  impl_->kv.flush_events();
  impl_->update_gauges();
  return result;
}

bool Engine::run_step() {
  SY_CHECK_MSG(!thread_.joinable(), "run_step() is for an engine that was not started");
  if (!failure().empty()) return false;
  return admit_and_step() == StepResult::kRan;
}

void Engine::run_until_idle() {
  while (run_step()) {
  }
  // A step runs whenever work waits and the cache is idle (the scheduler preempts the
  // rest), and a failure ends every request.
  SY_CHECK_MSG(impl_->scheduler.idle(), "requests are waiting but none could be scheduled");
}

std::vector<float> Engine::prompt_logits(const std::vector<int32_t>& prompt, bool all_positions) {
  SY_CHECK_MSG(!thread_.joinable(), "prompt_logits() is for an engine that was not started");
  const ModelConfig& c = backend_->config();
  if (prompt.empty()) throw std::invalid_argument("empty prompt");
  if (static_cast<int64_t>(prompt.size()) > c.max_context)
    throw std::invalid_argument("prompt of " + std::to_string(prompt.size()) + " tokens exceeds the model's context of " +
                                std::to_string(c.max_context));
  for (int32_t id : prompt)
    if (id < 0 || id >= c.vocab) throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary");
  const int32_t bs = backend_->block_size();
  const auto len = static_cast<int32_t>(prompt.size());
  std::vector<int32_t> blocks;
  if (!impl_->kv.allocate(blocks_for(len, bs), blocks)) throw std::invalid_argument("the prompt does not fit the KV cache");
  // In steps of at most prefill_chunk tokens, each reading the KV cache the earlier ones
  // wrote, as the scheduler runs a long prompt.
  std::vector<float> logits, step_logits;
  try {
    for (int32_t done = 0; done < len;) {
      const int32_t n = std::min(len - done, options_.prefill_chunk);
      const bool last = done + n == len;
      BatchPlan plan;
      plan.add_sequence({prompt.begin() + done, prompt.begin() + done + n}, done,
                        {blocks.begin(), blocks.begin() + blocks_for(done + n, bs)}, bs,
                        all_positions ? BatchPlan::Logits::kAll : last ? BatchPlan::Logits::kLast : BatchPlan::Logits::kNone);
      plan.kv_copies = impl_->kv.take_copies();  // the allocation's evictions, saved first
      backend_->forward(plan, step_logits);
      if (all_positions || last) logits.insert(logits.end(), step_logits.begin(), step_logits.end());
      done += n;
    }
  } catch (...) {
    impl_->kv.release(blocks);
    throw;
  }
  impl_->kv.release(blocks);
  return logits;
}

void Engine::run() {
  // Warm-up: one real step through the backend before the engine reports ready. Block 0
  // is written and never read before a later owner overwrites it.
  try {
    BatchPlan warm;
    warm.add_sequence({0}, 0, {0}, backend_->block_size(), BatchPlan::Logits::kLast);
    std::vector<float> logits;
    backend_->forward(warm, logits);
  } catch (const std::exception& e) {
    return fail_fatally(std::string("warm-up step: ") + e.what());
  }
  ready_ = true;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(inbox_mu_);
      inbox_cv_.wait(lock, [&] { return stopping_ || !submitted_.empty() || !cancelled_.empty() || !impl_->scheduler.idle(); });
      if (stopping_) break;
    }
    const StepResult result = admit_and_step();
    if (result == StepResult::kFailed) return;
    if (result == StepResult::kNothingToRun && !impl_->scheduler.idle()) {
      // Work is waiting but none could be scheduled (it cannot happen with an idle
      // cache); do not spin.
      std::unique_lock<std::mutex> lock(inbox_mu_);
      inbox_cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
  }
  // Requests submitted but never accepted also get their finish.
  std::deque<EngineRequest> left;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    left.swap(submitted_);
  }
  for (auto& r : left) impl_->fail(r, "the engine is shutting down");
  impl_->abort_all();
  impl_->update_gauges();
}

}  // namespace sy
