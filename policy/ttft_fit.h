// A replica's time to first token as a fixed latency plus a cost per token of prefill
// work, fitted from its recent first tokens. A replica behind a slow link (or a proxy
// adding delay) has the others' per-token cost and a larger latency: folding the latency
// into the per-token cost priced it several times too high for short prompts, and the
// router all but dropped it (measured on the agentic bench with 500 ms added to one of
// four replicas: 0.24 requests in flight there against ~3 on the others).
#pragma once

#include <cstdint>

namespace sy::policy {

class TtftFit {
 public:
  // `smoothing`: the weight of a new sample; older ones fade by (1 - smoothing) each.
  // The default constructor is not explicit so that a struct holding one can be
  // copy-list-initialized ({}), which clang refuses for an explicit one.
  TtftFit() : TtftFit(0.2) {}
  explicit TtftFit(double smoothing) : keep_(1 - smoothing) {}

  // One first token: `work_tokens` of prefill it waited for (its own uncached tokens and
  // those queued ahead), `ttft_s` from sending to its arrival.
  void add(double work_tokens, double ttft_s);

  int64_t samples() const { return samples_; }
  // Seconds per token of work (the slope) and the fixed part (the intercept, ≥ 0). Until
  // the samples' sizes spread enough to tell them apart (fewer than 3, or a weighted
  // spread under a quarter of their mean) the fit goes through zero: all cost per token.
  double per_token_s() const { return per_token_s_; }
  double latency_s() const { return latency_s_; }

 private:
  void refit();

  double keep_;
  double w_ = 0, x_ = 0, y_ = 0, xx_ = 0, xy_ = 0;  // exponentially weighted sums
  int64_t samples_ = 0;
  double per_token_s_ = 0, latency_s_ = 0;
};

}  // namespace sy::policy
