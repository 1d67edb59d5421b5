#include "common/throughput_meter.h"

namespace sy {

ThroughputMeter::Rates ThroughputMeter::sample(double now_s, int64_t generated_total, int64_t prefill_total) {
  std::lock_guard lock(mu_);
  // At most one sample a quarter second: a scrape reads several gauges at once, and the
  // window then holds a bounded number of samples.
  if (samples_.empty() || now_s - samples_.back().t >= 0.25) samples_.push_back({now_s, generated_total, prefill_total});
  // Keep one sample at or before the window's start, so the rate covers the whole window.
  while (samples_.size() > 2 && samples_[1].t <= now_s - window_s_) samples_.pop_front();
  const Sample& first = samples_.front();
  Rates r;
  r.span_s = now_s - first.t;
  if (r.span_s <= 0) return {};
  r.generated_per_s = static_cast<double>(generated_total - first.generated) / r.span_s;
  r.prompt_per_s = static_cast<double>(prefill_total - first.prompt) / r.span_s;
  return r;
}

}  // namespace sy
