// TtftFit (policy/ttft_fit.h): latency and per-token cost recovered from first tokens of
// spread sizes, the fit through zero where sizes do not spread, and an old regime fading.
#include "policy/ttft_fit.h"

#include <gtest/gtest.h>

#include <random>

namespace sy::policy {
namespace {

TEST(TtftFit, SeparatesAFixedLatencyFromThePerTokenCost) {
  // 500 ms added to a replica that computes 50 µs a token, ±5 % noise, prompts of
  // 500 to 20,000 tokens.
  TtftFit fit;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> size(500, 20000), noise(0.95, 1.05);
  double works = 0, ttfts = 0;
  for (int i = 0; i < 60; ++i) {
    const double work = size(rng), ttft = (0.5 + work * 50e-6) * noise(rng);
    fit.add(work, ttft);
    works += work;
    ttfts += ttft;
  }
  EXPECT_NEAR(fit.latency_s(), 0.5, 0.1);
  EXPECT_NEAR(fit.per_token_s(), 50e-6, 8e-6);
  EXPECT_EQ(fit.samples(), 60);
  // Folded into one ratio the same samples read as half again the per-token cost or more.
  EXPECT_GT(ttfts / works, 1.5 * 50e-6);
}

TEST(TtftFit, SamplesOfOneSizeOrTooFewGoThroughZero) {
  TtftFit fit;
  fit.add(1000, 2.0);
  EXPECT_DOUBLE_EQ(fit.per_token_s(), 2e-3);
  EXPECT_DOUBLE_EQ(fit.latency_s(), 0);
  fit.add(4000, 2.3);  // two samples: no fit yet
  EXPECT_DOUBLE_EQ(fit.latency_s(), 0);
  TtftFit same;
  for (int i = 0; i < 50; ++i) same.add(1000 + (i % 3), 1.0 + 0.01 * (i % 2));
  EXPECT_DOUBLE_EQ(same.latency_s(), 0);
  EXPECT_NEAR(same.per_token_s(), 1e-3, 2e-5);
  // Work that costs less when larger (a negative slope) is noise: through zero too.
  TtftFit odd;
  for (int i = 0; i < 20; ++i) odd.add(i % 2 ? 500 : 5000, i % 2 ? 2.0 : 1.0);
  EXPECT_DOUBLE_EQ(odd.latency_s(), 0);
  EXPECT_GT(odd.per_token_s(), 0);
  // Bad samples are ignored.
  odd.add(0, 1.0);
  odd.add(100, -1.0);
  EXPECT_EQ(odd.samples(), 20);
}

TEST(TtftFit, AnOldRegimeFades) {
  TtftFit fit(0.2);
  for (int i = 0; i < 100; ++i) fit.add(1000 + 500 * (i % 8), 0.25 + (1000 + 500 * (i % 8)) * 1e-4);
  EXPECT_NEAR(fit.latency_s(), 0.25, 1e-6);
  // The link recovers: no added latency from then on.
  for (int i = 0; i < 100; ++i) fit.add(1000 + 500 * (i % 8), (1000 + 500 * (i % 8)) * 1e-4);
  EXPECT_NEAR(fit.latency_s(), 0, 1e-6);
  EXPECT_NEAR(fit.per_token_s(), 1e-4, 1e-9);
}

}  // namespace
}  // namespace sy::policy
