// The power-aware stagger's rule (startup.max_power_w, docs/CONFIG.md): a worker's model
// load draws a spike of power on its GPUs, and several at once have tripped supplies. So
// the next worker starts only when the GPUs' measured draw plus the largest spike
// measured so far stays within the limit. A spike is measured, not guessed: the peak
// draw while a worker loads (spawn to ready) minus the draw just before it started. The
// first worker starts without one (its load is what gets measured). No I/O: the gateway
// feeds readings (watts, NaN when it has none) and asks.
#pragma once

#include <string>
#include <vector>

namespace sy::policy {

struct LoadSpike {
  std::string replica;
  double baseline_w = 0;  // the draw when it started
  double peak_w = 0;      // the highest draw seen while it loaded
  double spike_w() const { return peak_w > baseline_w ? peak_w - baseline_w : 0; }
};

class PowerStagger {
 public:
  explicit PowerStagger(double max_power_w) : max_power_w_(max_power_w) {}

  bool enabled() const { return max_power_w_ > 0; }
  double max_power_w() const { return max_power_w_; }

  // `replica` began loading; `watts`: the draw just before. A load still open is closed
  // first (loads are one at a time under this rule).
  void load_started(const std::string& replica, double watts);
  // A reading, at any time; while a worker loads it may raise that load's peak.
  void observe(double watts);
  // The loading worker is ready (or failed): its spike is kept.
  void load_finished();

  // Whether the next worker may start with the GPUs drawing `watts`: off → yes; while one
  // loads → no; no reading (NaN) → yes (the rule cannot apply; the gateway logs it); no
  // spike measured yet → when the draw itself is within the limit; else when draw +
  // spike_w() ≤ max_power_w.
  bool may_start(double watts) const;
  // The largest spike measured; 0 before any.
  double spike_w() const;
  bool loading() const { return loading_; }
  const LoadSpike& current() const { return current_; }   // the open load, while loading()
  const std::vector<LoadSpike>& spikes() const { return spikes_; }  // finished loads, oldest first

 private:
  double max_power_w_;
  bool loading_ = false;
  LoadSpike current_;
  std::vector<LoadSpike> spikes_;
};

}  // namespace sy::policy
