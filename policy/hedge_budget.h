// The budget that hedges and retries spend, as gRPC's retry throttling does: a token
// bucket that every client request fills by `ratio` and every extra upstream attempt
// empties by one. Attempts are allowed only while the bucket is above half full, so
// when every replica fails, extra attempts stay near `ratio` × client requests instead
// of multiplying the load (no retry storm).
#pragma once

#include <algorithm>

namespace sy::policy {

class HedgeBudget {
 public:
  explicit HedgeBudget(double ratio = 0.1, double max_tokens = 10.0) : ratio_(ratio), max_(max_tokens), tokens_(max_tokens) {}

  // A client request arrived.
  void on_request() { tokens_ = std::min(max_, tokens_ + ratio_); }
  // May an extra attempt (hedge or retry) go out? Spends one token if so.
  bool try_spend() {
    if (tokens_ - 1.0 < max_ / 2) return false;
    tokens_ -= 1.0;
    return true;
  }
  double tokens() const { return tokens_; }

 private:
  double ratio_;
  double max_;
  double tokens_;
};

}  // namespace sy::policy
