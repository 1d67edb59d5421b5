#include "policy/ttft_fit.h"

#include <cmath>

namespace sy::policy {

void TtftFit::add(double work_tokens, double ttft_s) {
  if (!(work_tokens > 0) || !(ttft_s >= 0) || !std::isfinite(ttft_s)) return;
  w_ = keep_ * w_ + 1;
  x_ = keep_ * x_ + work_tokens;
  y_ = keep_ * y_ + ttft_s;
  xx_ = keep_ * xx_ + work_tokens * work_tokens;
  xy_ = keep_ * xy_ + work_tokens * ttft_s;
  ++samples_;
  refit();
}

void TtftFit::refit() {
  const double mx = x_ / w_, my = y_ / w_;
  const double var = xx_ / w_ - mx * mx;
  const double cov = xy_ / w_ - mx * my;
  // Through zero: the ratio of the weighted sums (the cost of the samples' work).
  per_token_s_ = my / mx;
  latency_s_ = 0;
  if (samples_ < 3 || var < 0.0625 * mx * mx) return;  // spread (std dev) under a quarter of the mean
  const double slope = cov / var;
  const double intercept = my - slope * mx;
  // A negative slope or intercept is noise (or a queue the work term missed): keep the
  // fit through zero.
  if (slope > 0 && intercept >= 0) {
    per_token_s_ = slope;
    latency_s_ = intercept;
  }
}

}  // namespace sy::policy
