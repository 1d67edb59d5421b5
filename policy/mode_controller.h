// Decides when the fleet should switch between the throughput shape (many replicas, one
// device each) and the latency shape (one replica over all devices), from what each mode
// was measured to deliver at the current load (mode_estimates.h) and what a switch was
// measured to cost. The rule, for load bucket b (docs/CONFIG.md, "Mode controller"):
//
//   1. A mode "keeps up" at b when requests waited in fewer than half of its samples.
//      Both keep up: the gain is the other mode's per-user speed over this one's. Only
//      the other keeps up: the gain is its aggregate rate over this one's (at least
//      min_gain). Only this one keeps up: stay. Neither: aggregate over aggregate.
//   2. Switch when gain ≥ min_gain (hysteresis) and gain × horizon_s ≥ the measured
//      seconds of a switch into the other mode (the service lost while switching is
//      won back within the horizon), held for sustain_s, with at least min_dwell_s spent
//      in the current mode.
//   3. Until both modes are known at b (kMinSamples each), the load thresholds decide
//      (busy above to_throughput_above → throughput, quiet below to_latency_below →
//      latency), which also explores the other mode's numbers.
#pragma once

#include <optional>
#include <string>

#include "policy/clock.h"
#include "policy/mode_estimates.h"

namespace sy::policy {

struct ModeControllerOptions {
  double to_throughput_above = 8.0;  // requests in flight + queued: busy → throughput
  double to_latency_below = 2.0;     // quiet → latency (below to_throughput_above)
  double sustain_s = 30.0;
  double min_dwell_s = 120.0;
  double min_gain = 0.15;            // the other mode must be this much better (hysteresis)
  double horizon_s = 600.0;          // how long a load level is expected to last
  double default_switch_s = 60.0;    // a switch's cost before one was measured
};

class ModeController {
 public:
  ModeController(ModeControllerOptions options, const Clock& clock, FleetMode initial);

  // Learns from `s` (taken in the current mode) and returns a mode to switch to when the
  // rule says so.
  std::optional<FleetMode> observe(const ModeSample& s);
  // The fleet switched (by this controller or an operator).
  void switched(FleetMode m);
  // The switch into `m` finished after `seconds`.
  void switch_done(FleetMode m, double seconds) { estimates_.switch_measured(m, seconds); }
  FleetMode mode() const { return mode_; }
  const ModeEstimates& estimates() const { return estimates_; }
  // Why the last observe() wanted what it wanted, one line (for logs and status).
  const std::string& reason() const { return reason_; }

 private:
  // The gain of switching at sample `s`, by the rule above; nullopt: not both known.
  std::optional<double> measured_gain(const ModeSample& s) const;

  ModeControllerOptions options_;
  const Clock& clock_;
  FleetMode mode_;
  double mode_since_;
  std::optional<double> condition_since_;
  ModeEstimates estimates_;
  std::string reason_;
};

}  // namespace sy::policy
