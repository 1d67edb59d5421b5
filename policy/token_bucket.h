// A token bucket: holds at most `burst` tokens, refills at `rate_per_s`, and each
// admitted event takes one. A refusal says how long until a token will be there, which
// is what a 429's Retry-After tells the client. Time comes from the caller (seconds on
// a monotonic clock), so tests drive it.
#pragma once

#include <algorithm>

namespace sy::policy {

class TokenBucket {
 public:
  // Starts full. `rate_per_s` > 0, `burst` >= 1.
  TokenBucket(double rate_per_s, double burst, double now_s) : rate_(rate_per_s), burst_(burst), tokens_(burst), last_s_(now_s) {}

  // Takes a token if one is there (true); else sets `wait_s` to the time until one is.
  bool try_take(double now_s, double& wait_s) {
    refill(now_s);
    if (tokens_ >= 1.0) {
      tokens_ -= 1.0;
      wait_s = 0;
      return true;
    }
    wait_s = (1.0 - tokens_) / rate_;
    return false;
  }
  double tokens(double now_s) {
    refill(now_s);
    return tokens_;
  }

 private:
  void refill(double now_s) {
    if (now_s > last_s_) tokens_ = std::min(burst_, tokens_ + (now_s - last_s_) * rate_);
    last_s_ = std::max(last_s_, now_s);
  }

  double rate_;
  double burst_;
  double tokens_;
  double last_s_;
};

}  // namespace sy::policy
