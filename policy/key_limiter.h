// Per-API-key admission limits, checked before a request is queued: a rate limit (a
// token bucket: requests per second and a burst) and a cap on the key's requests in
// progress. An admitted request takes one token and one slot, and gives the slot back
// with release() when it ends. A refused one takes nothing and learns when to retry
// (a 429's Retry-After). Keys without limits are admitted untracked.
//
// Not thread-safe; the clock is injected.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "policy/clock.h"
#include "policy/token_bucket.h"

namespace sy::policy {

struct KeyLimit {
  double requests_per_s = 0;   // 0: no rate limit
  double burst = 0;            // requests at once after a quiet spell; 0: max(1, requests_per_s)
  int32_t max_concurrent = 0;  // requests in progress; 0: no cap
};

enum class KeyVerdict { kAdmitted, kRateLimited, kConcurrencyLimited };

struct KeyDecision {
  KeyVerdict verdict = KeyVerdict::kAdmitted;
  double retry_after_s = 0;  // when refused: seconds until a retry can pass (>= 0)
};

class KeyLimiter {
 public:
  // A request refused for concurrency cannot know when a slot frees; it is told this.
  static constexpr double kConcurrencyRetryS = 1.0;

  KeyLimiter(std::map<std::string, KeyLimit> limits, const Clock& clock);

  KeyDecision admit(const std::string& key);
  // An admitted request of `key` ended.
  void release(const std::string& key);
  int32_t in_progress(const std::string& key) const;

 private:
  struct KeyState {
    KeyLimit limit;
    std::optional<TokenBucket> bucket;  // absent without a rate limit
    int32_t in_progress = 0;
  };
  const Clock& clock_;
  std::unordered_map<std::string, KeyState> keys_;
};

}  // namespace sy::policy
