// Decides when the fleet should switch between the throughput shape (many replicas,
// one device each) and the latency shape (one replica over all devices), from the load
// the gateway sees. Switching is expensive (a drain and a staggered restart), so it
// needs the load beyond a threshold for `sustain_s`, thresholds apart (hysteresis), and
// at least `min_dwell_s` in the current mode.
#pragma once

#include <optional>
#include <string>

#include "policy/clock.h"

namespace sy::policy {

enum class FleetMode { kThroughput, kLatency };
const char* fleet_mode_name(FleetMode m);

struct ModeControllerOptions {
  double to_throughput_above = 8.0;  // requests in flight + queued: busy → throughput
  double to_latency_below = 2.0;     // quiet → latency (below to_throughput_above)
  double sustain_s = 30.0;
  double min_dwell_s = 120.0;
};

class ModeController {
 public:
  ModeController(ModeControllerOptions options, const Clock& clock, FleetMode initial);

  // Feeds the current load; returns a mode to switch to when the rule says so.
  std::optional<FleetMode> observe(double load);
  // The fleet switched (by this controller or an operator).
  void switched(FleetMode m);
  FleetMode mode() const { return mode_; }

 private:
  ModeControllerOptions options_;
  const Clock& clock_;
  FleetMode mode_;
  double mode_since_;
  std::optional<double> condition_since_;
};

}  // namespace sy::policy
