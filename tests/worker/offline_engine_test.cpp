// The engine run offline (on the caller's thread: Engine::run_step, run_offline) against
// the same engine on its own thread: the same tokens, text and finish for sampled,
// seeded, penalized and stop-string requests; prompt_logits in chunks against one step
// (the cpu backend's numerics are batch-invariant, so both are exact comparisons).
#include <gtest/gtest.h>

#include <stdexcept>

#include "engine_test_util.h"
#include "offline_engine.h"

namespace sy {
namespace {

using testing::CollectingSink;

const char kModel[] = "qwen3-tiny-bf16.gguf";

std::shared_ptr<Backend> open_cpu(const ModelSource& src) {
  BackendOptions bo;
  bo.num_kv_blocks = 64;
  return create_backend("cpu", src, ModelConfig::from_source(src), bo);
}

// Sampled, seeded requests, with logprobs and penalties (sampled on the host) and
// without, that end in each way: a stop string, the length limit, a stop token id. The
// stops are taken from a first run without them, so that they occur.
std::vector<EngineRequest> mixed_requests(const ModelSource& src, std::shared_ptr<const Tokenizer> tok) {
  const char* texts[] = {"Once upon a time", "The capital of France is", "def fib(n):", "1, 2, 3, 4,"};
  std::vector<EngineRequest> reqs;
  for (size_t i = 0; i < std::size(texts); ++i) {
    EngineRequest r;
    r.id = "r" + std::to_string(i);
    r.prompt_ids = tok->encode(texts[i], true);
    r.sampling.temperature = 0.9f;
    r.sampling.top_p = 0.95f;
    r.sampling.seed = 1000 + i;
    r.sampling.max_tokens = 24;
    r.sampling.ignore_eos = true;
    reqs.push_back(r);
  }
  reqs[1].sampling.logprobs = 2;
  reqs[2].sampling.repetition_penalty = 1.3f;
  reqs[3].sampling.temperature = 0.0f;
  Engine probe(open_cpu(src), tok, EngineOptions{});
  const std::vector<Completion> free_run = run_offline(probe, reqs);
  const std::string& text = free_run[0].text;
  EXPECT_GE(text.size(), 12u);
  reqs[0].sampling.stop = {"never appears", text.substr(text.size() / 2, 3)};
  reqs[3].sampling.stop_token_ids = {free_run[3].token_ids.at(12)};
  return reqs;
}

TEST(OfflineEngine, RunsWhatTheEngineThreadRuns) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  EngineOptions eo;
  eo.max_num_seqs = 3;  // one request waits for a slot
  eo.prefill_chunk = 5;  // prompts in chunks, mixed with decodes
  const std::vector<EngineRequest> reqs = mixed_requests(*src, tok);

  Engine threaded(open_cpu(*src), tok, eo);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (EngineRequest r : reqs) {
    sinks.push_back(std::make_shared<CollectingSink>());
    r.sink = sinks.back();
    threaded.submit(std::move(r));
  }
  threaded.start();

  Engine offline(open_cpu(*src), tok, eo);
  const std::vector<Completion> got = run_offline(offline, reqs);
  ASSERT_EQ(got.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    const FinishEvent want = sinks[i]->wait();
    EXPECT_EQ(got[i].token_ids, sinks[i]->ids()) << "request " << i;
    EXPECT_EQ(got[i].text, sinks[i]->text()) << "request " << i;
    EXPECT_EQ(finish_reason_name(got[i].finish.reason), std::string(finish_reason_name(want.reason))) << "request " << i;
    EXPECT_EQ(got[i].finish.completion_tokens, want.completion_tokens) << "request " << i;
    EXPECT_EQ(got[i].finish.matched_stop, want.matched_stop) << "request " << i;
    EXPECT_NE(got[i].finish.reason, FinishReason::kError) << got[i].finish.error;
  }
  // Each way of ending happened, so each was compared.
  EXPECT_EQ(got[0].finish.reason, FinishReason::kStop);
  EXPECT_EQ(got[0].finish.matched_stop, reqs[0].sampling.stop[1]);
  EXPECT_EQ(got[1].finish.reason, FinishReason::kLength);
  EXPECT_EQ(got[1].token_ids.size(), 24u);
  EXPECT_EQ(got[3].finish.reason, FinishReason::kStop);
  EXPECT_LE(got[3].token_ids.size(), 12u);
  EXPECT_GT(offline.steps(), 24);  // chunked prefills and a waiting request: more steps than tokens
  EXPECT_FALSE(offline.ready());   // never started
}

TEST(OfflineEngine, RefusedRequestsFinishWithAnError) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  auto engine = testing::offline_engine(open_cpu(*src), *src);
  std::vector<EngineRequest> reqs = testing::greedy_requests({{1, 2, 3}, {}, {1, 999999999}}, 4);
  reqs[0].id = reqs[1].id = "same";
  const std::vector<Completion> got = run_offline(*engine, reqs);
  EXPECT_EQ(got[0].finish.reason, FinishReason::kLength);
  EXPECT_EQ(got[0].token_ids.size(), 4u);
  EXPECT_EQ(got[1].finish.reason, FinishReason::kError);  // empty prompt
  EXPECT_EQ(got[2].finish.reason, FinishReason::kError);  // outside the vocabulary
  EXPECT_NE(got[2].finish.error.find("vocabulary"), std::string::npos) << got[2].finish.error;
}

TEST(OfflineEngine, PromptLogitsInChunksEqualOneStep) {
  auto src = ModelSource::open(testing::fixture_path(kModel));
  auto whole = testing::offline_engine(open_cpu(*src), *src);
  auto chunked = testing::offline_engine(open_cpu(*src), *src, 5);  // 5 steps, the last partial
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 23; ++i) ids.push_back(1000 + 37 * i);
  const auto vocab = static_cast<size_t>(whole->config().vocab);
  const std::vector<float> all = whole->prompt_logits(ids, true);
  ASSERT_EQ(all.size(), ids.size() * vocab);
  EXPECT_EQ(chunked->prompt_logits(ids, true), all);
  const std::vector<float> last(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end());
  EXPECT_EQ(chunked->prompt_logits(ids, false), last);
  EXPECT_EQ(whole->prompt_logits(ids, false), last);
  // The blocks went back: the same prompt fits again and again in a cache of 64 blocks.
  for (int i = 0; i < 80; ++i) ASSERT_EQ(whole->prompt_logits(ids, false).size(), vocab);
  EXPECT_THROW(whole->prompt_logits({}, true), std::invalid_argument);
  EXPECT_THROW(whole->prompt_logits({1, -1}, true), std::invalid_argument);
  EXPECT_THROW(whole->prompt_logits(std::vector<int32_t>(64 * 16 + 1, 1), false), std::invalid_argument);
}

}  // namespace
}  // namespace sy
