#include "policy/mode_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace sy::policy {
namespace {

FleetMode other(FleetMode m) { return m == FleetMode::kThroughput ? FleetMode::kLatency : FleetMode::kThroughput; }

// b over a, minus one; a non-positive a against a positive b is a large gain.
double gain_of(double a, double b) {
  if (a > 0) return b / a - 1;
  return b > 0 ? std::numeric_limits<double>::infinity() : 0;
}

std::string format(const char* fmt, double a, double b, double c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

ModeController::ModeController(ModeControllerOptions options, const Clock& clock, FleetMode initial)
    : options_(options), clock_(clock), mode_(initial), mode_since_(clock.now_s()), estimates_(options.default_switch_s) {}

std::optional<double> ModeController::measured_gain(const ModeSample& s) const {
  const int b = ModeEstimates::bucket(s.load);
  const FleetMode o = other(mode_);
  if (!estimates_.known(mode_, b) || !estimates_.known(o, b)) return std::nullopt;
  const ModeEstimate& here = estimates_.at(mode_, b);
  const ModeEstimate& there = estimates_.at(o, b);
  const bool up_here = here.queued_fraction < 0.5, up_there = there.queued_fraction < 0.5;
  if (up_here && up_there) return gain_of(here.user_tok_s, there.user_tok_s);
  if (up_there) return std::max(options_.min_gain, gain_of(here.aggregate_tok_s, there.aggregate_tok_s));
  if (up_here) return -1.0;
  return gain_of(here.aggregate_tok_s, there.aggregate_tok_s);
}

std::optional<FleetMode> ModeController::observe(const ModeSample& s) {
  const double now = clock_.now_s();
  estimates_.observe(mode_, s);
  const FleetMode o = other(mode_);
  bool wants_other = false;
  if (const auto gain = measured_gain(s)) {
    const double cost_s = estimates_.switch_s(o);
    wants_other = *gain >= options_.min_gain && *gain * options_.horizon_s >= cost_s;
    reason_ = std::string("measured: ") + fleet_mode_name(o) + format(" gains %.2f at load %.0f; a switch costs %.0f s", *gain, s.load, cost_s);
  } else {
    wants_other = mode_ == FleetMode::kLatency ? s.load > options_.to_throughput_above : s.load < options_.to_latency_below;
    reason_ = std::string("thresholds (") + fleet_mode_name(o) + " not yet measured at this load)" +
              format(": load %.0f, above %.0f or below %.0f", s.load, options_.to_throughput_above, options_.to_latency_below);
  }
  if (!wants_other) {
    condition_since_.reset();
    return std::nullopt;
  }
  if (!condition_since_) condition_since_ = now;
  if (now - *condition_since_ < options_.sustain_s || now - mode_since_ < options_.min_dwell_s) return std::nullopt;
  return o;
}

void ModeController::switched(FleetMode m) {
  mode_ = m;
  mode_since_ = clock_.now_s();
  condition_since_.reset();
}

}  // namespace sy::policy
