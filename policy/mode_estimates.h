// What each capacity mode delivers, learned from live traffic, and what a switch costs.
// Per mode and load bucket (requests in flight + queued, by powers of two: 1, 2, 4, ...,
// 64 and more), exponentially weighted averages of the fleet's output rate, of one
// user's decode speed and of how often requests waited in the gateway's queue; per
// direction, the measured duration of the last switch (drain to every replica ready).
// Pure bookkeeping: the controller (mode_controller.h) reads it.
#pragma once

#include <array>

namespace sy::policy {

enum class FleetMode { kThroughput, kLatency };
const char* fleet_mode_name(FleetMode m);

// One observation of the fleet in its current mode (the gateway takes one every poll).
struct ModeSample {
  double load = 0;             // requests in flight + queued
  double queued = 0;           // of which waiting in the gateway's queue
  double aggregate_tok_s = 0;  // output tokens per second, every user together
  double user_tok_s = 0;       // one stream's decode speed (1 / median inter-token gap); 0: unknown
};

struct ModeEstimate {
  double aggregate_tok_s = 0;
  double user_tok_s = 0;
  double queued_fraction = 0;  // of samples in which requests waited
  int samples = 0;
};

class ModeEstimates {
 public:
  static constexpr int kBuckets = 7;      // 1, 2, 4, 8, 16, 32, 64+
  static constexpr int kMinSamples = 3;   // an estimate counts from this many samples on
  static constexpr double kWeight = 0.2;  // of a new sample in the averages

  explicit ModeEstimates(double default_switch_s) : default_switch_s_(default_switch_s) {}

  static int bucket(double load);
  // Learns from `s` for `mode`; an idle fleet (load below 0.5) teaches nothing.
  void observe(FleetMode mode, const ModeSample& s);
  const ModeEstimate& at(FleetMode mode, int bucket) const { return table_[index(mode)][bucket]; }
  bool known(FleetMode mode, int bucket) const { return at(mode, bucket).samples >= kMinSamples; }

  // A switch into `to` took `seconds` (drain start to every replica ready).
  void switch_measured(FleetMode to, double seconds) { switch_s_[index(to)] = seconds; }
  // The last measured switch into `to`; the default before any.
  double switch_s(FleetMode to) const { return switch_s_[index(to)] > 0 ? switch_s_[index(to)] : default_switch_s_; }
  bool switch_measured(FleetMode to) const { return switch_s_[index(to)] > 0; }

 private:
  static int index(FleetMode m) { return m == FleetMode::kThroughput ? 0 : 1; }
  double default_switch_s_;
  std::array<std::array<ModeEstimate, kBuckets>, 2> table_{};
  std::array<double, 2> switch_s_{0, 0};
};

}  // namespace sy::policy
