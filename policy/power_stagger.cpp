#include "policy/power_stagger.h"

#include <algorithm>
#include <cmath>

namespace sy::policy {

void PowerStagger::load_started(const std::string& replica, double watts) {
  if (loading_) load_finished();
  loading_ = true;
  current_ = {replica, std::isfinite(watts) ? watts : 0, std::isfinite(watts) ? watts : 0};
}

void PowerStagger::observe(double watts) {
  if (loading_ && std::isfinite(watts)) current_.peak_w = std::max(current_.peak_w, watts);
}

void PowerStagger::load_finished() {
  if (!loading_) return;
  loading_ = false;
  spikes_.push_back(current_);
  if (spikes_.size() > 64) spikes_.erase(spikes_.begin());  // restarts keep adding
}

double PowerStagger::spike_w() const {
  double most = 0;
  for (const LoadSpike& s : spikes_) most = std::max(most, s.spike_w());
  return most;
}

bool PowerStagger::may_start(double watts) const {
  if (!enabled()) return true;
  if (loading_) return false;
  if (!std::isfinite(watts)) return true;
  return watts + spike_w() <= max_power_w_;
}

}  // namespace sy::policy
