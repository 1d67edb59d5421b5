// The sampler on hand-made logits: each processing stage, determinism of seeded draws,
// and that draws follow the distribution they claim.
#include "worker/engine/sampler.h"

#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <map>
#include <random>
#include <set>

namespace sy {
namespace {

SamplingParams params(float temperature) {
  SamplingParams p;
  p.temperature = temperature;
  return p;
}

const std::vector<float> kLogits = {1.0f, 3.0f, 2.0f, 0.5f, 3.0f, -1.0f};

TEST(Sampler, GreedyIsArgmaxFirstOnTies) {
  EXPECT_EQ(sample_token(kLogits, params(0), 1, 0, {}, {}).id, 1);  // 1 and 4 tie: the first wins
}

TEST(Sampler, DrawsArePureFunctionsOfSeedAndIndex) {
  const SamplingParams p = params(1.0f);
  for (int64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(sample_token(kLogits, p, 42, i, {}, {}).id, sample_token(kLogits, p, 42, i, {}, {}).id);
    EXPECT_EQ(sampling_uniform(42, i), sampling_uniform(42, i));
  }
  int differ = 0;
  for (int64_t i = 0; i < 50; ++i) differ += sampling_uniform(42, i) != sampling_uniform(43, i);
  EXPECT_EQ(differ, 50);
}

TEST(Sampler, DrawFrequenciesFollowTheSoftmax) {
  const SamplingParams p = params(0.7f);
  std::vector<double> prob(kLogits.size());
  double z = 0;
  for (size_t i = 0; i < kLogits.size(); ++i) z += prob[i] = std::exp(kLogits[i] / 0.7);
  std::map<int32_t, int> counts;
  const int n = 200000;
  for (int64_t i = 0; i < n; ++i) ++counts[sample_token(kLogits, p, 9, i, {}, {}).id];
  for (size_t t = 0; t < kLogits.size(); ++t) {
    const double expected = prob[t] / z;
    const double sd = std::sqrt(expected * (1 - expected) / n);
    EXPECT_NEAR(counts[static_cast<int32_t>(t)] / static_cast<double>(n), expected, 5 * sd + 1e-4) << "token " << t;
  }
}

TEST(Sampler, FiltersKeepOnlyWhatTheyShould) {
  struct Row {
    const char* name;
    SamplingParams p;
    std::set<int32_t> allowed;
  };
  SamplingParams k2 = params(1.0f);
  k2.top_k = 2;  // 1 and 4 (the tie keeps the lower id first)
  SamplingParams p_small = params(1.0f);
  p_small.top_p = 0.5f;  // the two 3.0 logits hold ~0.62 of the mass: the first alone is < 0.5
  SamplingParams minp = params(1.0f);
  minp.min_p = 0.3f;  // exp(2-3) = 0.37 ≥ 0.3 keeps token 2; exp(1-3) = 0.14 drops token 0
  const std::vector<Row> rows = {
      {"top_k=2", k2, {1, 4}},
      {"top_p=0.5", p_small, {1, 4}},
      {"min_p=0.3", minp, {1, 2, 4}},
  };
  for (const Row& r : rows) {
    std::set<int32_t> seen;
    for (int64_t i = 0; i < 3000; ++i) seen.insert(sample_token(kLogits, r.p, 3, i, {}, {}).id);
    EXPECT_EQ(seen, r.allowed) << r.name;
  }
}

TEST(Sampler, PenaltiesMoveTheArgmax) {
  SamplingParams rep = params(0);
  rep.repetition_penalty = 2.0f;  // token 1: 3.0 → 1.5, so token 4 wins
  EXPECT_EQ(sample_token(kLogits, rep, 0, 0, std::vector<int32_t>{1}, {}).id, 4);
  SamplingParams pres = params(0);
  pres.presence_penalty = 1.5f;  // tokens 1 and 4 seen in the output: 1.5 each; token 2 (2.0) wins
  EXPECT_EQ(sample_token(kLogits, pres, 0, 0, {}, std::vector<int32_t>{1, 4}).id, 2);
  SamplingParams freq = params(0);
  freq.frequency_penalty = 0.6f;  // token 1 twice (−1.2 → 1.8), token 4 once (−0.6 → 2.4)
  EXPECT_EQ(sample_token(kLogits, freq, 0, 0, {}, std::vector<int32_t>{1, 1, 4}).id, 4);
  SamplingParams neg = params(0);
  neg.repetition_penalty = 2.0f;  // a negative logit is multiplied: −1 → −2
  std::vector<float> l = {-1.0f, -1.5f};
  EXPECT_EQ(sample_token(l, neg, 0, 0, std::vector<int32_t>{0}, {}).id, 1);
}

// Over a masked row (refused ids at -inf) sample_token_among gives the token, logprob and
// top logprobs that sample_token gives, for every filter and many draws.
TEST(Sampler, AmongAllowedIdsEqualsTheMaskedRow) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t n = 50 + trial;
    std::vector<float> logits(static_cast<size_t>(n));
    for (float& x : logits) x = std::round(normal(rng) * 4) / 4;  // ties happen
    std::vector<int32_t> allowed;
    std::vector<float> masked(logits.size(), -INFINITY);
    for (int32_t id = 0; id < n; ++id)
      if (rng() % 5 == 0 || id == trial % n) allowed.push_back(id), masked[static_cast<size_t>(id)] = logits[static_cast<size_t>(id)];
    SamplingParams p = params(trial % 5 == 0 ? 0.0f : 0.5f + static_cast<float>(trial % 4) * 0.5f);
    p.top_k = trial % 3 == 0 ? 3 : 0;
    p.top_p = trial % 4 == 1 ? 0.8f : 1.0f;
    p.min_p = trial % 6 == 2 ? 0.1f : 0.0f;
    p.logprobs = trial % 2 ? 3 : -1;
    for (int draw = 0; draw < 20; ++draw) {
      const double u = sampling_uniform(static_cast<uint64_t>(trial), draw);
      const SampleResult full = sample_token_with_draw(masked, p, u, {}, {});
      const SampleResult among = sample_token_among(logits, allowed, p, u);
      ASSERT_EQ(among.id, full.id) << "trial " << trial << " draw " << draw;
      if (p.logprobs < 0) continue;
      EXPECT_NEAR(among.logprob, full.logprob, 1e-5f);
      const size_t k = std::min(among.top_logprobs.size(), allowed.size());
      for (size_t i = 0; i < k; ++i) {
        EXPECT_EQ(among.top_logprobs[i].first, full.top_logprobs[i].first);
        EXPECT_NEAR(among.top_logprobs[i].second, full.top_logprobs[i].second, 1e-5f);
      }
    }
  }
}

TEST(Sampler, LogprobsComeFromTheRawLogits) {
  SamplingParams p = params(0);
  p.logprobs = 2;
  p.repetition_penalty = 5.0f;  // changes the choice, not the reported logprobs
  const SampleResult r = sample_token(kLogits, p, 0, 0, std::vector<int32_t>{1, 4}, {});
  double z = 0;
  for (float x : kLogits) z += std::exp(x);
  EXPECT_EQ(r.id, 2);
  EXPECT_NEAR(r.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(r.top_logprobs.size(), 2u);
  EXPECT_EQ(r.top_logprobs[0].first, 1);
  EXPECT_EQ(r.top_logprobs[1].first, 4);
  EXPECT_NEAR(r.top_logprobs[0].second, 3.0 - std::log(z), 1e-6);
}

// A grammar's mask puts refused tokens at -inf. A draw at the very top of the cumulative
// sum (u = 1, or rounding) used to fall back to the last candidate, a refused token.
TEST(Sampler, ADrawAtTheTopNeverTakesATokenOfNoProbability) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> masked = {1.0f, -inf, -inf, 0.5f, -inf};
  SamplingParams p = params(1.0f);
  for (double u : {0.0, 0.5, 0.999999, 1.0}) {
    const SampleResult r = sample_token_with_draw(masked, p, u, {}, {});
    EXPECT_TRUE(r.id == 0 || r.id == 3) << "u = " << u << " drew token " << r.id;
  }
  EXPECT_EQ(sample_token_with_draw(masked, p, 1.0, {}, {}).id, 3);  // the last allowed one
}

}  // namespace
}  // namespace sy
