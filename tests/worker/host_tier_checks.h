// The KV host tier on the real engine: a prefix evicted from the cache by another
// request comes back from host memory on the next request that shares it, with the
// same tokens as computing it again. Shared by the cpu test and the cuda one.
#pragma once

#include <gtest/gtest.h>

#include <random>

#include "common/model_source.h"
#include "common/tokenizer/tokenizer.h"
#include "fixture_util.h"
#include "policy/block_hash.h"
#include "worker/engine/offline.h"

namespace sy::testing {

struct HostTierRun {
  int32_t cached_tokens = -1;  // of the request that comes back to the evicted prefix
  std::vector<int32_t> tokens;
  int64_t saved = 0, loaded = 0;  // host-tier blocks
  int64_t capacity = 0;           // the engine's host-tier slots at the end
};

// With bo.kv_host_in_background: waits until the backend's tier is allocated and checks
// that it is not in use before the engine's first step takes it. Without: it is in use
// when create_backend returns.
inline void expect_host_tier_waiting(Backend& backend, const BackendOptions& bo) {
  if (!bo.kv_host_in_background) {
    EXPECT_GT(backend.num_host_kv_blocks(), 0) << "a host tier wanted at once not in use when the backend was made";
    return;
  }
  backend.wait_host_tier();
  EXPECT_EQ(backend.num_host_kv_blocks(), 0) << "a background host tier in use before the engine took it";
}

inline std::vector<int32_t> host_tier_random_ids(size_t n, uint32_t seed, int32_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, vocab - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs, one after another on a cache of 48 blocks of 16 tokens: a (600 shared tokens and
// 3 more), a flood of 600 other tokens that evicts most of a's cached blocks (its last
// first), then b (the shared 600 and 4 more). `host_slots` 0: no host tier; prefix
// caching 0ff: b alone on a fresh cache, computed whole. With bo.pcp > 1 each rank holds
// 1/pcp of the blocks and of the slots (the group's tier shares the ranks' budgets).
inline HostTierRun run_host_tier(const std::string& model, const std::string& device, BackendOptions bo,
                                 int32_t host_slots, bool prefix_caching = true) {
  auto src = ModelSource::open(fixture_path(model));
  const ModelConfig config = ModelConfig::from_source(*src);
  bo.num_kv_blocks = 48 / bo.pcp;
  bo.block_size = 16;
  // Slots sized for a whole block's values, enough for every rank's shard.
  bo.kv_host_memory_bytes = static_cast<size_t>(host_slots / bo.pcp) * kv_bytes_per_block(config, 16, sizeof(float));
  auto backend = create_backend(device, *src, config, bo);
  if (host_slots > 0) expect_host_tier_waiting(*backend, bo);
  EngineOptions eo;
  eo.prefill_chunk = 64;
  eo.prefix_caching = prefix_caching;
  eo.model_fingerprint = policy::model_fingerprint("host-tier " + model);
  Engine engine(std::move(backend), Tokenizer::from_model(*src), eo);
  const auto shared = host_tier_random_ids(600, 1, config.vocab);
  auto a = shared, b = shared;
  a.insert(a.end(), {11, 12, 13});
  b.insert(b.end(), {21, 22, 23, 24});
  auto flood = host_tier_random_ids(600, 2, config.vocab);
  HostTierRun out;
  for (const auto* prompt : {&a, &flood, &b}) {
    if (!prefix_caching && prompt != &b) continue;
    EngineRequest r = greedy_request(*prompt, 8);
    r.sampling.ignore_eos = true;
    const Completion c = run_offline(engine, {r})[0];
    EXPECT_EQ(c.finish.reason, FinishReason::kLength) << c.finish.error;
    out.cached_tokens = c.finish.cached_tokens;
    out.tokens = c.token_ids;
  }
  out.saved = engine.stats().kv_host_blocks_saved_total.load();
  out.loaded = engine.stats().kv_host_blocks_loaded_total.load();
  out.capacity = engine.stats().kv_host_blocks_capacity.load();
  return out;
}

// b finds its whole prefix (37 full blocks) again through the host tier, and the tokens
// of b computed whole; without the tier the flood left it a's first 10 blocks (a's 38
// blocks were released last first; the flood's 38 took the 11 free ones and 27 of a's).
inline void expect_host_tier_serves_the_evicted_prefix(const std::string& model, const std::string& device,
                                                       const BackendOptions& bo) {
  const HostTierRun cold = run_host_tier(model, device, bo, 0, false);
  const HostTierRun without = run_host_tier(model, device, bo, 0);
  const HostTierRun with = run_host_tier(model, device, bo, 100);
  ASSERT_EQ(cold.tokens.size(), 8u);
  EXPECT_EQ(without.cached_tokens, 160) << "the flood should have evicted all but a's first 10 blocks";
  EXPECT_EQ(without.saved + without.loaded, 0);
  EXPECT_EQ(with.cached_tokens, 592);
  EXPECT_GE(with.capacity, 100);  // (a tensor-parallel rank's shard takes a smaller slot)
  EXPECT_EQ(without.capacity, 0);
  EXPECT_GE(with.saved, 27);
  EXPECT_GE(with.loaded, 27);
  EXPECT_EQ(with.tokens, cold.tokens);
  EXPECT_EQ(without.tokens, cold.tokens);
}

// Twelve requests at once over four shared 200-token prefixes on a cache of 24 blocks
// (one request's 17 at a time: the rest wait or are preempted) and a host tier of 16
// slots (its own slots evicted, pinned ones kept while their copies wait): every request
// gets the tokens it gets alone on a cold cache. bo.pcp > 1: the group's blocks and slots.
inline void expect_host_tier_under_pressure_keeps_tokens(const std::string& model, const std::string& device,
                                                         BackendOptions bo) {
  auto src = ModelSource::open(fixture_path(model));
  const ModelConfig config = ModelConfig::from_source(*src);
  std::vector<EngineRequest> requests;
  for (uint32_t i = 0; i < 12; ++i) {
    auto prompt = host_tier_random_ids(200, 10 + i % 4, config.vocab);
    const auto own = host_tier_random_ids(50, 100 + i, config.vocab);
    prompt.insert(prompt.end(), own.begin(), own.end());
    requests.push_back(greedy_request(prompt, 16));
    requests.back().sampling.ignore_eos = true;
  }
  // Each request's tokens; `counts` gets the host tier's saved and loaded blocks.
  auto run = [&](int32_t kv_blocks, int32_t host_slots, bool prefix_caching, const std::vector<EngineRequest>& reqs,
                 HostTierRun* counts) {
    BackendOptions o = bo;
    o.num_kv_blocks = kv_blocks / bo.pcp;
    o.block_size = 16;
    o.kv_host_memory_bytes = static_cast<size_t>(host_slots / bo.pcp) * kv_bytes_per_block(config, 16, sizeof(float));
    EngineOptions eo;
    eo.prefill_chunk = 64;
    eo.max_num_seqs = 4;
    eo.prefix_caching = prefix_caching;
    eo.model_fingerprint = policy::model_fingerprint("host-tier pressure " + model);
    auto backend = create_backend(device, *src, config, o);
    if (host_slots > 0) expect_host_tier_waiting(*backend, o);
    Engine engine(std::move(backend), Tokenizer::from_model(*src), eo);
    std::vector<std::vector<int32_t>> out;
    for (const Completion& c : run_offline(engine, reqs)) out.push_back(c.token_ids);
    if (counts) {
      counts->saved = engine.stats().kv_host_blocks_saved_total.load();
      counts->loaded = engine.stats().kv_host_blocks_loaded_total.load();
    }
    return out;
  };
  HostTierRun counts;
  const auto pressed = run(24, 16, true, requests, &counts);
  EXPECT_GT(counts.saved, 0) << "nothing was saved to the host tier";
  EXPECT_GT(counts.loaded, 0) << "nothing was loaded from the host tier";
  ASSERT_EQ(pressed.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(pressed[i], run(64, 0, false, {requests[i]}, nullptr)[0]) << "request " << i;
}

}  // namespace sy::testing
