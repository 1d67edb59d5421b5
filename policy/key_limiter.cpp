#include "policy/key_limiter.h"

#include <algorithm>

namespace sy::policy {

KeyLimiter::KeyLimiter(std::map<std::string, KeyLimit> limits, const Clock& clock) : clock_(clock) {
  for (auto& [key, limit] : limits) {
    KeyState s;
    s.limit = limit;
    if (limit.requests_per_s > 0) {
      const double burst = limit.burst > 0 ? std::max(1.0, limit.burst) : std::max(1.0, limit.requests_per_s);
      s.bucket.emplace(limit.requests_per_s, burst, clock_.now_s());
    }
    keys_.emplace(key, std::move(s));
  }
}

KeyDecision KeyLimiter::admit(const std::string& key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return {};
  KeyState& s = it->second;
  // The concurrency cap first: a request it refuses must not spend a rate token.
  if (s.limit.max_concurrent > 0 && s.in_progress >= s.limit.max_concurrent)
    return {KeyVerdict::kConcurrencyLimited, kConcurrencyRetryS};
  double wait_s = 0;
  if (s.bucket && !s.bucket->try_take(clock_.now_s(), wait_s)) return {KeyVerdict::kRateLimited, wait_s};
  ++s.in_progress;
  return {};
}

void KeyLimiter::release(const std::string& key) {
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.in_progress > 0) --it->second.in_progress;
}

int32_t KeyLimiter::in_progress(const std::string& key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.in_progress;
}

}  // namespace sy::policy
