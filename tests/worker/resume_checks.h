// What seeded failover promises, checked on a real Engine (any backend): a request that
// generates N tokens equals the same request stopped after k tokens and continued with
// those k as resume ids (what the gateway sends another replica), token for token, text
// for text and logprob for logprob, for every sampler knob; and a seeded request gives
// the same tokens alone and inside a full batch.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "policy/block_hash.h"
#include "worker/engine/engine.h"

namespace sy::testing {

struct SamplerKnob {
  std::string name;
  std::function<void(SamplingParams&)> set;
};

// Each knob on top of a seeded draw (temperature 0.8, seed 7), and greedy ones.
inline std::vector<SamplerKnob> sampler_knobs() {
  auto seeded = [](std::function<void(SamplingParams&)> more) {
    return [more](SamplingParams& p) {
      p.temperature = 0.8f;
      p.seed = 7;
      if (more) more(p);
    };
  };
  return {
      {"greedy", [](SamplingParams& p) { p.temperature = 0; }},
      {"temperature", seeded(nullptr)},
      {"top_k", seeded([](SamplingParams& p) { p.top_k = 20; })},
      {"top_p", seeded([](SamplingParams& p) { p.top_p = 0.9f; })},
      {"min_p", seeded([](SamplingParams& p) { p.min_p = 0.05f; })},
      {"presence_penalty", seeded([](SamplingParams& p) { p.presence_penalty = 1.5f; })},
      {"frequency_penalty", seeded([](SamplingParams& p) { p.frequency_penalty = 1.0f; })},
      {"repetition_penalty", seeded([](SamplingParams& p) { p.repetition_penalty = 1.3f; })},
      {"greedy_repetition_penalty", [](SamplingParams& p) { p.temperature = 0; p.repetition_penalty = 1.5f; }},
      {"logprobs", seeded([](SamplingParams& p) { p.logprobs = 5; })},
      {"all_filters", seeded([](SamplingParams& p) {
         p.top_k = 50;
         p.top_p = 0.95f;
         p.min_p = 0.02f;
         p.presence_penalty = 0.5f;
         p.frequency_penalty = 0.3f;
         p.repetition_penalty = 1.1f;
         p.logprobs = 2;
       })},
  };
}

// The qwen3-tiny fixture's engine on `device` ("cpu" | "cuda") with `bo` (its KV size
// and decode graphs set here), started.
inline std::unique_ptr<Engine> make_fixture_engine(const std::string& device, BackendOptions bo, int32_t max_num_seqs,
                                                   int32_t prefill_chunk) {
  auto src = ModelSource::open(fixture_path("qwen3-tiny-bf16.gguf"));
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  bo.num_kv_blocks = 1024;
  bo.max_num_seqs = max_num_seqs;
  bo.max_step_tokens = prefill_chunk + max_num_seqs;
  EngineOptions eo;
  eo.max_num_seqs = max_num_seqs;
  eo.prefill_chunk = prefill_chunk;
  eo.model_fingerprint = policy::model_fingerprint("resume-checks qwen3-tiny " + device);
  auto e = std::make_unique<Engine>(create_backend(device, *src, ModelConfig::from_source(*src), bo), tok, eo);
  e->start();
  return e;
}

// A request of `prompt_len` random ids (a fixed seed), `max_tokens` tokens, no EOS stop.
inline EngineRequest random_request(const std::string& id, size_t prompt_len, uint32_t seed, int32_t max_tokens) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, 151000);
  EngineRequest r;
  r.id = id;
  r.prompt_ids.resize(prompt_len);
  for (auto& t : r.prompt_ids) t = d(rng);
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

inline std::shared_ptr<CollectingSink> run_request(Engine& e, EngineRequest r) {
  auto sink = std::make_shared<CollectingSink>(&e);
  r.sink = sink;
  e.submit(std::move(r));
  sink->wait();
  return sink;
}

// Bitwise float equality (EXPECT_EQ on floats compares values, and NaN never equals).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline void expect_same_events(const std::vector<TokenEvent>& got, const std::vector<TokenEvent>& want, size_t offset,
                               const std::string& label) {
  ASSERT_EQ(got.size() + offset, want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i) {
    const TokenEvent& g = got[i];
    const TokenEvent& w = want[i + offset];
    ASSERT_EQ(g.id, w.id) << label << ": token " << i + offset << " of " << want.size();
    EXPECT_TRUE(same_bits(g.logprob, w.logprob)) << label << ": logprob of token " << i + offset;
    ASSERT_EQ(g.top_logprobs.size(), w.top_logprobs.size()) << label;
    for (size_t j = 0; j < g.top_logprobs.size(); ++j) {
      EXPECT_EQ(g.top_logprobs[j].first, w.top_logprobs[j].first) << label << ": top logprob " << j << " of token " << i + offset;
      EXPECT_TRUE(same_bits(g.top_logprobs[j].second, w.top_logprobs[j].second)) << label;
    }
  }
}

// `full` run once; then, for each k, the same request continued from its first k tokens:
// the rest of the tokens, the client's text (what was streamed before k plus what the
// continuation streams) and the usage must be those of the full run.
inline void expect_resume_exact(Engine& e, const EngineRequest& full, const std::vector<size_t>& ks, const std::string& label) {
  const auto whole = run_request(e, full);
  const FinishEvent whole_finish = whole->wait();
  const std::vector<TokenEvent> events = whole->events();
  ASSERT_GT(events.size(), ks.back()) << label << ": the full run stopped too early for the resume points";
  for (const size_t k : ks) {
    const std::string at = label + ", resumed after " + std::to_string(k);
    EngineRequest resumed = full;
    resumed.id = full.id + "-resume-" + std::to_string(k);
    resumed.resume_ids.clear();
    std::string sent;  // what the first replica streamed before it failed
    for (size_t i = 0; i < k; ++i) {
      resumed.resume_ids.push_back(events[i].id);
      sent += events[i].text;
    }
    const auto rest = run_request(e, resumed);
    const FinishEvent f = rest->wait();
    expect_same_events(rest->events(), events, k, at);
    EXPECT_EQ(sent + rest->text(), whole->text()) << at;
    EXPECT_EQ(f.reason, whole_finish.reason) << at;
    EXPECT_EQ(f.completion_tokens, whole_finish.completion_tokens) << at;
    EXPECT_EQ(f.matched_stop, whole_finish.matched_stop) << at;
  }
}

// `req` alone, then inside a batch that fills max_num_seqs with `others` requests of
// other prompts (long ones among them, so prefill chunks share steps with decodes):
// identical tokens and logprobs.
inline void expect_batch_invariant(Engine& e, const EngineRequest& req, int others, uint32_t seed, const std::string& label) {
  const auto alone = run_request(e, req);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, e.config().vocab - 1);
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (int i = 0; i < others; ++i) {
    EngineRequest o;
    o.id = req.id + "-other-" + std::to_string(i);
    o.prompt_ids.resize(static_cast<size_t>(3 + (i * 37) % 180));
    for (auto& t : o.prompt_ids) t = tok(rng);
    o.sampling.temperature = i % 2 ? 0.0f : 1.0f;
    o.sampling.seed = static_cast<uint64_t>(i);
    o.sampling.max_tokens = 20 + i;
    o.sampling.ignore_eos = true;
    auto sink = std::make_shared<CollectingSink>(&e);
    o.sink = sink;
    sinks.push_back(sink);
    e.submit(std::move(o));
    if (i == others / 2) {  // the request arrives while the others are running
      EngineRequest again = req;
      again.id = req.id + "-in-batch";
      auto s = std::make_shared<CollectingSink>(&e);
      again.sink = s;
      sinks.push_back(s);
      e.submit(std::move(again));
    }
  }
  for (auto& s : sinks) s->wait();
  const auto in_batch = sinks[static_cast<size_t>(others / 2) + 1];
  expect_same_events(in_batch->events(), alone->events(), 0, label + ", in a full batch");
  EXPECT_EQ(in_batch->text(), alone->text()) << label;
}

// Every knob of sampler_knobs() resumed after 1, 7, 23 and 39 of 40 tokens.
inline void expect_resume_exact_for_every_knob(Engine& e) {
  for (const auto& knob : sampler_knobs()) {
    EngineRequest r = random_request("knob-" + knob.name, 30, 5, 40);
    knob.set(r.sampling);
    expect_resume_exact(e, r, {1, 7, 23, 39}, knob.name);
  }
}

// A seeded (and a greedy) request alone and among 15 others.
inline void expect_batch_invariant_for_some_knobs(Engine& e) {
  for (const std::string name : {"temperature", "all_filters", "greedy"}) {
    EngineRequest r = random_request("batch-" + name, 90, 21, 48);
    for (const auto& knob : sampler_knobs())
      if (knob.name == name) knob.set(r.sampling);
    expect_batch_invariant(e, r, 15, 99, name);
  }
}

}  // namespace sy::testing
