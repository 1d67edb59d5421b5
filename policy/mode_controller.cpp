#include "policy/mode_controller.h"

namespace sy::policy {

const char* fleet_mode_name(FleetMode m) { return m == FleetMode::kThroughput ? "throughput" : "latency"; }

ModeController::ModeController(ModeControllerOptions options, const Clock& clock, FleetMode initial)
    : options_(options), clock_(clock), mode_(initial), mode_since_(clock.now_s()) {}

std::optional<FleetMode> ModeController::observe(double load) {
  const double now = clock_.now_s();
  const bool wants_other = mode_ == FleetMode::kLatency ? load > options_.to_throughput_above : load < options_.to_latency_below;
  if (!wants_other) {
    condition_since_.reset();
    return std::nullopt;
  }
  if (!condition_since_) condition_since_ = now;
  if (now - *condition_since_ < options_.sustain_s || now - mode_since_ < options_.min_dwell_s) return std::nullopt;
  return mode_ == FleetMode::kLatency ? FleetMode::kThroughput : FleetMode::kLatency;
}

void ModeController::switched(FleetMode m) {
  mode_ = m;
  mode_since_ = clock_.now_s();
  condition_since_.reset();
}

}  // namespace sy::policy
