// The serving engine on a real fixture model: continuous batching, prefix cache and its
// events, priorities, preemption, cancellation, resume, stops and logprobs.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "common/tokenizer/tokenizer.h"
#include "engine_test_util.h"
#include "fixture_model_test.h"
#include "policy/block_hash.h"
#include "worker/engine/engine.h"
#include "worker/engine/sampler.h"

namespace sy {
namespace {

using testing::CollectingSink;

const char kModel[] = "qwen3-tiny-bf16.gguf";

struct Setup {
  int32_t kv_blocks = 512;
  int32_t max_num_seqs = 16;
  int32_t prefill_chunk = 256;
  bool prefix_caching = true;
};

std::unique_ptr<Engine> make_engine(const Setup& s) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  BackendOptions bo;
  bo.num_kv_blocks = s.kv_blocks;
  auto backend = create_backend("cpu", *src, ModelConfig::from_source(*src), bo);
  EngineOptions eo;
  eo.max_num_seqs = s.max_num_seqs;
  eo.prefill_chunk = s.prefill_chunk;
  eo.prefix_caching = s.prefix_caching;
  eo.model_fingerprint = policy::model_fingerprint("engine-test qwen3-tiny");
  auto e = std::make_unique<Engine>(std::move(backend), tok, eo);
  e->start();
  return e;
}

EngineRequest greedy_request(const std::string& id, std::vector<int32_t> prompt, int32_t max_tokens, std::shared_ptr<RequestSink> sink) {
  EngineRequest r;
  r.id = id;
  r.prompt_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.sink = std::move(sink);
  return r;
}

std::vector<int32_t> random_ids(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, 151000);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs one request alone and returns its sink.
std::shared_ptr<CollectingSink> run_one(Engine& e, EngineRequest r) {
  auto sink = std::make_shared<CollectingSink>(&e);
  r.sink = sink;
  e.submit(std::move(r));
  sink->wait();
  return sink;
}

TEST(Engine, GreedyMatchesGoldensAloneAndConcurrently) {
  auto engine = make_engine({.prefill_chunk = 4});  // chunked prefills mixed with decodes
  const auto golden = testing::load_golden("qwen3-tiny");
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (size_t i = 0; i < golden["prompts"].size(); ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    engine->submit(greedy_request("p" + std::to_string(i), golden["prompts"][i]["ids"], 32, sinks.back()));
  }
  for (size_t i = 0; i < sinks.size(); ++i) {
    const FinishEvent f = sinks[i]->wait();
    EXPECT_EQ(f.reason, FinishReason::kLength);
    EXPECT_EQ(f.completion_tokens, 32);
    EXPECT_EQ(sinks[i]->ids(), golden["prompts"][i]["greedy_32"].get<std::vector<int32_t>>()) << "prompt " << i;
    EXPECT_EQ(sinks[i]->text(), golden["prompts"][i]["greedy_text"].get<std::string>());
  }
  auto alone = run_one(*engine, greedy_request("alone", golden["prompts"][4]["ids"], 32, nullptr));
  EXPECT_EQ(alone->ids(), golden["prompts"][4]["greedy_32"].get<std::vector<int32_t>>());
}

TEST(Engine, PrefixCacheSharesBlocksKeepsOutputAndPublishesHashes) {
  const auto shared = random_ids(600, 1);
  auto a = shared, b = shared;
  a.insert(a.end(), {11, 12, 13});
  b.insert(b.end(), {21, 22, 23, 24});

  auto cold = make_engine({.prefix_caching = false});
  const auto b_cold = run_one(*cold, greedy_request("b", b, 8, nullptr));
  EXPECT_EQ(b_cold->wait().cached_tokens, 0);

  auto engine = make_engine({});
  auto sub = engine->kv_events().subscribe(nullptr);  // events queue up until drained
  const auto a_run = run_one(*engine, greedy_request("a", a, 8, nullptr));
  EXPECT_EQ(a_run->wait().cached_tokens, 0);
  EXPECT_EQ(engine->stats().prefill_tokens_total.load(), static_cast<int64_t>(a.size()));
  const auto b_warm = run_one(*engine, greedy_request("b", b, 8, nullptr));
  const FinishEvent fb = b_warm->wait();
  EXPECT_GE(fb.cached_tokens, 512);
  EXPECT_EQ(fb.cached_tokens, 592);  // 37 full blocks of the shared 600 tokens
  EXPECT_EQ(b_warm->ids(), b_cold->ids());
  EXPECT_GE(engine->stats().prefix_cache_hit_tokens_total.load(), 592);
  // Only b's 12 uncached tokens were computed (what the serve log's prompt rate counts).
  EXPECT_EQ(engine->stats().prefill_tokens_total.load(), static_cast<int64_t>(a.size() + b.size() - 592));

  // The hashes of a's full blocks were announced as stored.
  const std::vector<KvEvent> events = sub->drain();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().hashes.size(), 0u);  // the snapshot of an empty cache comes first
  std::set<uint64_t> stored;
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq, events[i - 1].seq + 1);
    if (events[i].type == KvEvent::Type::kStored) stored.insert(events[i].hashes.begin(), events[i].hashes.end());
  }
  const auto expect = policy::prefix_block_hashes(policy::model_fingerprint("engine-test qwen3-tiny"), a, 16);
  for (uint64_t h : expect) EXPECT_TRUE(stored.count(h)) << "hash of a block of a not announced";
  // A late subscriber's snapshot holds the same hashes.
  auto late = engine->kv_events().subscribe(nullptr);
  const auto snap = late->drain();
  ASSERT_EQ(snap.size(), 1u);
  const std::set<uint64_t> snap_set(snap[0].hashes.begin(), snap[0].hashes.end());
  for (uint64_t h : expect) EXPECT_TRUE(snap_set.count(h));
}

TEST(Engine, InteractiveRequestOvertakesALongBatchPrefill) {
  auto engine = make_engine({.prefill_chunk = 64});
  auto batch = std::make_shared<CollectingSink>(engine.get());
  EngineRequest br = greedy_request("batch", random_ids(4000, 2), 2, batch);
  br.priority = kPriorityBatch;
  engine->submit(std::move(br));
  while (engine->steps() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  auto inter = std::make_shared<CollectingSink>(engine.get());
  EngineRequest ir = greedy_request("inter", random_ids(20, 3), 1, inter);
  ir.priority = kPriorityInteractive;
  const int64_t arrival_step = engine->steps();
  engine->submit(std::move(ir));
  inter->wait();
  EXPECT_LE(inter->first_token_step() - arrival_step, 2) << "interactive first token came " << inter->first_token_step() - arrival_step << " steps after arrival";
  EXPECT_FALSE(batch->finished()) << "the batch prefill (63 chunks) should still be running";
  batch->wait();
  EXPECT_EQ(batch->ids().size(), 2u);
}

TEST(Engine, PreemptionUnderKvPressureLosesNothingAndKeepsGreedyOutput) {
  std::vector<std::vector<int32_t>> prompts;
  for (uint32_t i = 0; i < 6; ++i) prompts.push_back(random_ids(40 + 7 * i, 10 + i));
  auto roomy = make_engine({});
  std::vector<std::vector<int32_t>> expected;
  for (size_t i = 0; i < prompts.size(); ++i) expected.push_back(run_one(*roomy, greedy_request("r" + std::to_string(i), prompts[i], 32, nullptr))->ids());

  auto tight = make_engine({.kv_blocks = 14, .prefill_chunk = 32});  // each request needs 5 to 7 blocks
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    EngineRequest r = greedy_request("t" + std::to_string(i), prompts[i], 32, sinks.back());
    r.priority = static_cast<int32_t>(i % 3);
    tight->submit(std::move(r));
  }
  int64_t told = 0;
  for (size_t i = 0; i < sinks.size(); ++i) {
    const FinishEvent f = sinks[i]->wait();
    EXPECT_EQ(f.reason, FinishReason::kLength) << i;
    EXPECT_EQ(sinks[i]->ids(), expected[i]) << "request " << i;
    // Each preemption is told to its request, with the context it must compute again.
    for (int32_t n : sinks[i]->preempted()) {
      EXPECT_GE(n, static_cast<int32_t>(prompts[i].size())) << i;
      EXPECT_LE(n, static_cast<int32_t>(prompts[i].size()) + 32) << i;
      ++told;
    }
  }
  EXPECT_GT(tight->stats().preemptions_total.load(), 0);
  EXPECT_EQ(told, tight->stats().preemptions_total.load());
}

TEST(Engine, CancellationFreesBlocksWithinOneStep) {
  auto engine = make_engine({.prefix_caching = false});
  auto sink = std::make_shared<CollectingSink>(engine.get());
  engine->submit(greedy_request("long", random_ids(100, 4), 2000, sink));
  while (sink->ids().size() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(engine->stats().kv_blocks_used.load(), 0);
  const int64_t at_cancel = engine->steps();
  engine->cancel("long");
  const FinishEvent f = sink->wait();
  EXPECT_EQ(f.reason, FinishReason::kAbort);
  EXPECT_LE(engine->steps() - at_cancel, 1);
  // Gauges are refreshed after the step that handled the cancel.
  for (int i = 0; i < 1000 && engine->stats().kv_blocks_used.load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(engine->stats().kv_blocks_used.load(), 0);
  EXPECT_EQ(engine->stats().requests_running.load(), 0);
  EXPECT_EQ(engine->stats().requests_aborted_total.load(), 1);
}

TEST(Engine, ResumeContinuesExactlyGreedyAndSeeded) {
  auto engine = make_engine({});
  const auto prompt = random_ids(30, 5);
  for (bool seeded : {false, true}) {
    EngineRequest full = greedy_request("full", prompt, 24, nullptr);
    if (seeded) {
      full.sampling.temperature = 1.0f;
      full.sampling.top_k = 50;
      full.sampling.top_p = 0.95f;
      full.sampling.seed = 7;
    }
    const auto full_run = run_one(*engine, full);
    const auto ids = full_run->ids();
    ASSERT_EQ(ids.size(), 24u);
    const auto events = full_run->events();
    std::string sent_before;  // what the first replica streamed for the first 10 tokens
    for (size_t i = 0; i < 10; ++i) sent_before += events[i].text;

    EngineRequest resumed = full;
    resumed.id = "resumed";
    resumed.resume_ids.assign(ids.begin(), ids.begin() + 10);
    const auto rest = run_one(*engine, resumed);
    EXPECT_EQ(rest->ids(), std::vector<int32_t>(ids.begin() + 10, ids.end())) << (seeded ? "seeded" : "greedy");
    EXPECT_EQ(sent_before + rest->text(), full_run->text()) << (seeded ? "seeded" : "greedy");
    EXPECT_EQ(rest->wait().completion_tokens, 24);
  }
}

TEST(Engine, StopStringsAndStopTokens) {
  auto engine = make_engine({});
  const auto golden = testing::load_golden("qwen3-tiny");
  const auto prompt = golden["prompts"][0]["ids"].get<std::vector<int32_t>>();
  const auto full = golden["prompts"][0]["greedy_32"].get<std::vector<int32_t>>();
  const std::string text = golden["prompts"][0]["greedy_text"];
  // A stop string from the middle of the text: output ends right before its first match.
  const std::string stop = text.substr(text.size() / 2, 4);
  EngineRequest r = greedy_request("s", prompt, 32, nullptr);
  r.sampling.stop = {stop};
  const auto s = run_one(*engine, r);
  const FinishEvent f = s->wait();
  EXPECT_EQ(f.reason, FinishReason::kStop);
  EXPECT_EQ(f.matched_stop, stop);
  EXPECT_EQ(s->text(), text.substr(0, text.find(stop)));
  // A stop token: output ends before its first occurrence, which still counts as generated.
  EngineRequest t = greedy_request("t", prompt, 32, nullptr);
  t.sampling.stop_token_ids = {full[6]};
  const auto st = run_one(*engine, t);
  const size_t first = static_cast<size_t>(std::find(full.begin(), full.end(), full[6]) - full.begin());
  EXPECT_EQ(st->ids(), std::vector<int32_t>(full.begin(), full.begin() + static_cast<ptrdiff_t>(first)));
  EXPECT_EQ(st->wait().completion_tokens, static_cast<int32_t>(first) + 1);
  EXPECT_EQ(st->wait().reason, FinishReason::kStop);
}

TEST(Engine, LogprobsAreConsistentWithGreedyChoices) {
  auto engine = make_engine({});
  EngineRequest r = greedy_request("l", random_ids(12, 6), 6, nullptr);
  r.sampling.logprobs = 3;
  const auto s = run_one(*engine, r);
  for (const TokenEvent& e : s->events()) {
    ASSERT_EQ(e.top_logprobs.size(), 3u);
    EXPECT_EQ(e.top_logprobs[0].first, e.id);  // greedy picks the most likely token
    EXPECT_FLOAT_EQ(e.top_logprobs[0].second, e.logprob);
    EXPECT_LE(e.logprob, 0.0f);
    EXPECT_GE(e.top_logprobs[0].second, e.top_logprobs[1].second);
    EXPECT_GE(e.top_logprobs[1].second, e.top_logprobs[2].second);
  }
}

// A CPU backend that claims to sample on the device: forward_sample() chooses each row
// on the host from the given draw, and records what the engine sent it.
class DeviceSamplingCpu : public Backend {
 public:
  explicit DeviceSamplingCpu(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "device-sampling-cpu"; }
  const ModelConfig& config() const override { return inner_->config(); }
  int32_t block_size() const override { return inner_->block_size(); }
  int32_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  void forward(const BatchPlan& plan, std::vector<float>& logits) override {
    ++forward_steps;
    inner_->forward(plan, logits);
  }
  bool samples_on_device() const override { return true; }
  void forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows, std::vector<int32_t>& ids) override {
    ++sample_steps;
    std::vector<float> logits;
    inner_->forward(plan, logits);
    ids = testing::host_sample_rows(logits, static_cast<size_t>(config().vocab), rows);
  }
  std::atomic<int> forward_steps{0}, sample_steps{0};

 private:
  std::unique_ptr<Backend> inner_;
};

// Rows without penalties or logprobs go to forward_sample() with sample_token's draw, so
// greedy and seeded requests come out exactly as from the host sampler; the others keep
// the logits path.
TEST(Engine, DeviceSamplingBackendGetsTheSameDrawsAsTheHostSampler) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  BackendOptions bo;
  bo.num_kv_blocks = 512;
  auto device = std::make_unique<DeviceSamplingCpu>(create_backend("cpu", *src, ModelConfig::from_source(*src), bo));
  DeviceSamplingCpu* counts = device.get();
  EngineOptions eo;
  eo.model_fingerprint = policy::model_fingerprint("engine-test qwen3-tiny");
  Engine device_engine(std::move(device), tok, eo);
  device_engine.start();
  auto host_engine = make_engine({});

  const auto prompt = random_ids(20, 11);
  EngineRequest greedy = greedy_request("g", prompt, 12, nullptr);
  EngineRequest seeded = greedy_request("s", prompt, 12, nullptr);
  seeded.sampling.temperature = 0.9f;
  seeded.sampling.top_k = 40;
  seeded.sampling.top_p = 0.9f;
  seeded.sampling.seed = 1234;
  for (const EngineRequest& r : {greedy, seeded})
    EXPECT_EQ(run_one(device_engine, r)->ids(), run_one(*host_engine, r)->ids()) << r.id;
  EXPECT_GT(counts->sample_steps.load(), 0);
  const int sample_steps = counts->sample_steps.load();

  EngineRequest penalized = seeded;
  penalized.id = "p";
  penalized.sampling.repetition_penalty = 1.3f;
  EngineRequest with_logprobs = greedy;
  with_logprobs.id = "l";
  with_logprobs.sampling.logprobs = 2;
  for (const EngineRequest& r : {penalized, with_logprobs})
    EXPECT_EQ(run_one(device_engine, r)->ids(), run_one(*host_engine, r)->ids()) << r.id;
  EXPECT_EQ(counts->sample_steps.load(), sample_steps);  // those stayed on the logits path
}

// A CPU backend whose forward() throws from its `fail_at`-th call on, as the cuda backend
// does on a CUDA error.
class FailingCpu : public Backend {
 public:
  FailingCpu(std::unique_ptr<Backend> inner, int fail_at) : inner_(std::move(inner)), fail_at_(fail_at) {}
  std::string name() const override { return "failing-cpu"; }
  const ModelConfig& config() const override { return inner_->config(); }
  int32_t block_size() const override { return inner_->block_size(); }
  int32_t num_kv_blocks() const override { return inner_->num_kv_blocks(); }
  void forward(const BatchPlan& plan, std::vector<float>& logits) override {
    if (++calls_ >= fail_at_) throw std::runtime_error("cuda backend: running the step: an illegal memory access was encountered");
    inner_->forward(plan, logits);
  }

 private:
  std::unique_ptr<Backend> inner_;
  int fail_at_;
  std::atomic<int> calls_{0};
};

std::unique_ptr<Engine> make_failing_engine(int fail_at, std::atomic<int>& fatal_calls) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  BackendOptions bo;
  bo.num_kv_blocks = 512;
  auto backend = std::make_unique<FailingCpu>(create_backend("cpu", *src, ModelConfig::from_source(*src), bo), fail_at);
  auto e = std::make_unique<Engine>(std::move(backend), tok, EngineOptions{});
  e->set_fatal_handler([&fatal_calls](const std::string&) { ++fatal_calls; });
  e->start();
  return e;
}

// A failed device step ends every request with an error naming it (never
// std::terminate), stops the engine and refuses what comes after.
TEST(Engine, AFailedDeviceStepEndsEveryRequestWithAnErrorAndStopsTheEngine) {
  std::atomic<int> fatal_calls{0};
  auto engine = make_failing_engine(12, fatal_calls);  // the warm-up, then 10 steps run
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.push_back(std::make_shared<CollectingSink>());
    engine->submit(greedy_request("f" + std::to_string(i), random_ids(20, 30 + i), 200, sinks.back()));
  }
  for (auto& s : sinks) {
    const FinishEvent f = s->wait();
    EXPECT_EQ(f.reason, FinishReason::kError);
    EXPECT_NE(f.error.find("illegal memory access"), std::string::npos) << f.error;
    EXPECT_LT(s->ids().size(), 200u);
  }
  // The handler runs on the engine thread after the requests have finished and the
  // gauges are updated.
  for (int i = 0; i < 5000 && fatal_calls.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(fatal_calls.load(), 1);
  EXPECT_FALSE(engine->ready());
  EXPECT_NE(engine->failure().find("illegal memory access"), std::string::npos);
  const auto late = run_one(*engine, greedy_request("late", {1, 2, 3}, 3, nullptr));
  EXPECT_EQ(late->wait().reason, FinishReason::kError);
  EXPECT_NE(late->wait().error.find("device failure"), std::string::npos) << late->wait().error;
  EXPECT_EQ(engine->stats().requests_running.load(), 0);
}

TEST(Engine, AFailedWarmUpStepNeverTurnsReady) {
  std::atomic<int> fatal_calls{0};
  auto engine = make_failing_engine(1, fatal_calls);
  for (int i = 0; i < 2000 && fatal_calls.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(fatal_calls.load(), 1);
  EXPECT_FALSE(engine->ready());
  EXPECT_NE(engine->failure().find("warm-up"), std::string::npos) << engine->failure();
  EXPECT_EQ(run_one(*engine, greedy_request("x", {1, 2}, 2, nullptr))->wait().reason, FinishReason::kError);
}

TEST(Engine, InvalidRequestsFinishWithAnError) {
  auto engine = make_engine({});
  auto check = [&](EngineRequest r, const std::string& needle) {
    const auto s = run_one(*engine, std::move(r));
    const FinishEvent f = s->wait();
    EXPECT_EQ(f.reason, FinishReason::kError);
    EXPECT_NE(f.error.find(needle), std::string::npos) << f.error;
  };
  check(greedy_request("e1", {}, 4, nullptr), "empty prompt");
  check(greedy_request("e2", {1, 999999}, 4, nullptr), "outside the vocabulary");
  check(greedy_request("e3", random_ids(4000, 7), 200, nullptr), "exceed the model's context");
  EngineRequest bad = greedy_request("e4", {1, 2}, 4, nullptr);
  bad.sampling.top_p = 0;
  check(bad, "top_p");
  // The engine still serves.
  EXPECT_EQ(run_one(*engine, greedy_request("ok", {1, 2, 3}, 3, nullptr))->ids().size(), 3u);
}

}  // namespace
}  // namespace sy
