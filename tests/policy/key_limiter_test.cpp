// Per-key rate and concurrency limits, driven by a manual clock: each row is a step
// (time, key, admit or release) and what the limiter must answer.
#include "policy/key_limiter.h"

#include <gtest/gtest.h>

namespace sy::policy {
namespace {

enum class Op { kAdmit, kRelease };

struct Step {
  double t;
  std::string key;
  Op op;
  KeyVerdict want = KeyVerdict::kAdmitted;
  double want_retry_s = 0;
  int32_t want_in_progress = -1;  // checked when >= 0
};

void run(const std::map<std::string, KeyLimit>& limits, const std::vector<Step>& steps) {
  ManualClock clock;
  KeyLimiter limiter(limits, clock);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    clock.set(s.t);
    SCOPED_TRACE("step " + std::to_string(i) + " at t=" + std::to_string(s.t) + " key " + s.key);
    if (s.op == Op::kAdmit) {
      const KeyDecision d = limiter.admit(s.key);
      EXPECT_EQ(d.verdict, s.want);
      EXPECT_NEAR(d.retry_after_s, s.want_retry_s, 1e-9);
    } else {
      limiter.release(s.key);
    }
    if (s.want_in_progress >= 0) {
      EXPECT_EQ(limiter.in_progress(s.key), s.want_in_progress);
    }
  }
}

constexpr auto A = Op::kAdmit;
constexpr auto R = Op::kRelease;
constexpr auto kOk = KeyVerdict::kAdmitted;
constexpr auto kRate = KeyVerdict::kRateLimited;
constexpr auto kBusy = KeyVerdict::kConcurrencyLimited;

TEST(KeyLimiter, RateLimitIsATokenBucket) {
  run({{"a", {.requests_per_s = 2, .burst = 3}}},
      {
          {0, "a", A}, {0, "a", R}, {0, "a", A}, {0, "a", R}, {0, "a", A}, {0, "a", R},  // the burst
          {0, "a", A, kRate, 0.5},     // empty: one token in 1/2 s
          {0.25, "a", A, kRate, 0.25}, // half a token so far
          {0.5, "a", A, kOk}, {0.5, "a", R},  // one token
          {0.5, "a", A, kRate, 0.5},
          {100, "a", A}, {100, "a", A}, {100, "a", A},  // refilled, but only up to the burst
          {100, "a", A, kRate, 0.5, 3},  // refused requests take no slot
      });
}

TEST(KeyLimiter, BurstDefaultsToTheRateAndAtLeastOne) {
  run({{"slow", {.requests_per_s = 0.5}}, {"fast", {.requests_per_s = 4}}},
      {
          {0, "slow", A}, {0, "slow", A, kRate, 2.0},
          {0, "fast", A}, {0, "fast", A}, {0, "fast", A}, {0, "fast", A}, {0, "fast", A, kRate, 0.25},
      });
}

TEST(KeyLimiter, ConcurrencyCapCountsRequestsInProgress) {
  run({{"b", {.max_concurrent = 2}}},
      {
          {0, "b", A, kOk, 0, 1},
          {0, "b", A, kOk, 0, 2},
          {0, "b", A, kBusy, KeyLimiter::kConcurrencyRetryS, 2},
          {5, "b", R, kOk, 0, 1},
          {5, "b", A, kOk, 0, 2},
          {5, "b", R}, {5, "b", R}, {5, "b", R, kOk, 0, 0},  // an extra release does not go below zero
          {5, "b", A, kOk, 0, 1},
      });
}

TEST(KeyLimiter, ConcurrencyRefusalSpendsNoRateToken) {
  run({{"c", {.requests_per_s = 1, .burst = 2, .max_concurrent = 1}}},
      {
          {0, "c", A, kOk, 0, 1},
          {0, "c", A, kBusy, 1.0},
          {0, "c", A, kBusy, 1.0},
          {0, "c", R},
          {0, "c", A, kOk, 0, 1},  // the second token was still there
          {0, "c", R},
          {0, "c", A, kRate, 1.0},
      });
}

TEST(KeyLimiter, KeysAreIndependentAndUnknownKeysUnlimited) {
  run({{"a", {.requests_per_s = 1, .burst = 1}}, {"b", {.requests_per_s = 1, .burst = 1}}},
      {
          {0, "a", A}, {0, "a", A, kRate, 1.0},
          {0, "b", A},  // a's bucket is a's alone
          {0, "", A, kOk, 0, 0}, {0, "other", A, kOk, 0, 0}, {0, "other", A, kOk, 0, 0},
      });
}

TEST(TokenBucket, TimeGoingBackAddsNothing) {
  TokenBucket b(10, 1, 100.0);
  double wait = -1;
  EXPECT_TRUE(b.try_take(100.0, wait));
  EXPECT_FALSE(b.try_take(50.0, wait));  // an earlier reading: no refill, no negative time
  EXPECT_NEAR(wait, 0.1, 1e-12);
  EXPECT_FALSE(b.try_take(100.05, wait));
  EXPECT_NEAR(wait, 0.05, 1e-9);
  EXPECT_TRUE(b.try_take(100.2, wait));
  EXPECT_NEAR(b.tokens(1e9), 1.0, 1e-12);  // never above the burst
}

}  // namespace
}  // namespace sy::policy
