// The capacity-mode controller (policy/mode_controller.h): the load thresholds while a
// mode is unmeasured, then the measured rule (keeps up, per-user speed, aggregate rate,
// hysteresis, the measured switch cost against the horizon, sustain and dwell), table-
// driven on a manual clock; and a simulated four-GPU fleet whose two shapes deliver what
// bench/simworker-style timing gives them, driven through a day of load phases.
#include "policy/mode_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace sy::policy {
namespace {

TEST(ModeEstimates, BucketsArePowersOfTwo) {
  const std::pair<double, int> rows[] = {{0, 0}, {1, 0}, {1.49, 0}, {2, 1}, {3, 2}, {4, 2}, {6, 3}, {8, 3},
                                         {12, 4}, {16, 4}, {32, 5}, {48, 6}, {64, 6}, {1000, 6}};
  for (const auto& [load, b] : rows) EXPECT_EQ(ModeEstimates::bucket(load), b) << load;
}

TEST(ModeEstimates, LearnsAveragesAndIgnoresAnIdleFleet) {
  ModeEstimates e(60);
  e.observe(FleetMode::kLatency, {0.2, 0, 999, 999});  // idle: nothing learned
  EXPECT_EQ(e.at(FleetMode::kLatency, 0).samples, 0);
  e.observe(FleetMode::kLatency, {1, 0, 100, 100});
  e.observe(FleetMode::kLatency, {1, 1, 200, 0});  // no ITL yet: the speed keeps its value
  const ModeEstimate& x = e.at(FleetMode::kLatency, 0);
  EXPECT_DOUBLE_EQ(x.aggregate_tok_s, 120);  // 100 + 0.2 × (200 − 100)
  EXPECT_DOUBLE_EQ(x.user_tok_s, 100);
  EXPECT_DOUBLE_EQ(x.queued_fraction, 0.2);
  EXPECT_FALSE(e.known(FleetMode::kLatency, 0));
  e.observe(FleetMode::kLatency, {1, 0, 100, 100});
  EXPECT_TRUE(e.known(FleetMode::kLatency, 0));
  EXPECT_FALSE(e.known(FleetMode::kThroughput, 0));
  EXPECT_DOUBLE_EQ(e.switch_s(FleetMode::kThroughput), 60) << "the default until measured";
  e.switch_measured(FleetMode::kThroughput, 42);
  EXPECT_DOUBLE_EQ(e.switch_s(FleetMode::kThroughput), 42);
}

TEST(ModeController, ThresholdsWhileUnmeasuredNeedSustainAndDwell) {
  ManualClock clock;
  ModeControllerOptions o;
  o.to_throughput_above = 8;
  o.to_latency_below = 2;
  o.sustain_s = 30;
  o.min_dwell_s = 120;
  ModeController c(o, clock, FleetMode::kLatency);
  clock.advance(200);
  EXPECT_FALSE(c.observe({20}));
  clock.advance(20);
  EXPECT_FALSE(c.observe({5})) << "load between the thresholds resets the timer";
  EXPECT_FALSE(c.observe({20}));
  clock.advance(31);
  EXPECT_EQ(c.observe({20}), FleetMode::kThroughput);
  c.switched(FleetMode::kThroughput);
  clock.advance(60);
  EXPECT_FALSE(c.observe({0}));
  clock.advance(40);
  EXPECT_FALSE(c.observe({0})) << "sustained 40 s but dwell of 120 s not reached";
  clock.advance(25);
  EXPECT_EQ(c.observe({0}), FleetMode::kLatency);
}

// Rows: what both modes were measured to deliver at load 4 (bucket 2), then what the
// controller in throughput mode wants after sustain and dwell.
TEST(ModeController, MeasuredRuleTable) {
  struct Row {
    const char* what;
    ModeSample throughput, latency;  // as measured (load 4 each)
    double switch_s;                 // measured switch into latency; 0: none measured
    bool to_latency;
  };
  const Row rows[] = {
      {"both keep up, latency 1.8× faster per user", {4, 0, 400, 100}, {4, 0, 720, 180}, 30, true},
      {"both keep up, latency only 10 % faster: within hysteresis", {4, 0, 400, 100}, {4, 0, 440, 110}, 30, false},
      {"latency faster but the switch costs more than the horizon wins back", {4, 0, 400, 100}, {4, 0, 480, 120}, 200, false},
      {"... and the same gain pays for a cheap switch", {4, 0, 400, 100}, {4, 0, 480, 120}, 100, true},
      {"the default cost (60 s) before a switch was measured", {4, 0, 400, 100}, {4, 0, 480, 120}, 0, true},
      {"latency faster per user but it queues at this load", {4, 0, 400, 100}, {4, 2, 500, 180}, 30, false},
      {"throughput queues and latency keeps up", {4, 2, 300, 100}, {4, 0, 400, 90}, 30, true},
      {"neither keeps up: the larger aggregate", {4, 2, 300, 100}, {4, 2, 400, 150}, 30, true},
      {"neither keeps up, throughput moves more", {4, 2, 400, 100}, {4, 2, 300, 150}, 30, false},
  };
  for (const Row& r : rows) {
    ManualClock clock;
    ModeControllerOptions o;
    o.sustain_s = 10;
    o.min_dwell_s = 60;
    o.horizon_s = 600;
    o.min_gain = 0.15;
    ModeController c(o, clock, FleetMode::kLatency);
    for (int i = 0; i < ModeEstimates::kMinSamples; ++i) c.observe(r.latency);
    c.switched(FleetMode::kThroughput);
    if (r.switch_s > 0) c.switch_done(FleetMode::kLatency, r.switch_s);
    std::optional<FleetMode> want;
    for (int t = 0; t <= 100; t += 2) {  // a poll every 2 s for 100 s
      want = c.observe(r.throughput);
      if (want) break;
      clock.advance(2);
    }
    EXPECT_EQ(want.has_value(), r.to_latency) << r.what << ": " << c.reason();
    if (want) {
      EXPECT_EQ(*want, FleetMode::kLatency) << r.what;
      EXPECT_GE(clock.now_s(), 60) << r.what << ": dwell";
    }
  }
}

// Four GPUs, bench/simworker-style timing: a replica's inter-token gap at batch n is
// 10 ms × (1 + n / 16); throughput runs 4 replicas of 8 slots, latency one TP4 replica
// of 16 slots that is 1.8× faster per user (the seed operator's 0.56× the other way).
// A switch takes 40 s. What each shape delivers at `load` concurrent users. The phases
// show the rule's reach too: a load bucket only one mode has run at is left to the
// thresholds.
ModeSample simulate(FleetMode mode, double load) {
  const bool tput = mode == FleetMode::kThroughput;
  const double slots = tput ? 32 : 16;
  const double served = std::min(load, slots);
  const double batch = tput ? served / 4 : served;
  const double itl_s = 0.010 * (1 + batch / 16) / (tput ? 1.0 : 1.8);
  return {load, std::max(0.0, load - slots), served / itl_s, 1 / itl_s};
}

TEST(ModeController, SimulatedFleetFollowsTheLoadWithoutFlapping) {
  ManualClock clock;
  ModeControllerOptions o;  // the defaults: sustain 30 s, dwell 120 s, thresholds 8 / 2
  FleetMode mode = FleetMode::kLatency;
  ModeController c(o, clock, mode);
  struct Phase {
    double seconds, load;
    FleetMode expected;  // at the phase's end
    int max_switches;    // during the phase
    bool measured;       // a switch in it came from the measured rule, not the thresholds
  };
  const Phase phases[] = {
      {300, 1, FleetMode::kLatency, 0, false},     // one user: latency, nothing to do
      {300, 4, FleetMode::kLatency, 0, false},     // four: between the thresholds, throughput unmeasured
      {400, 40, FleetMode::kThroughput, 1, false},  // a burst: thresholds explore throughput
      {400, 4, FleetMode::kLatency, 1, true},      // both measured at 4 and keep up: latency 1.8× per user
      {400, 40, FleetMode::kThroughput, 1, true},  // both measured at 40, neither keeps up: throughput moves more
      {600, 4, FleetMode::kLatency, 1, true},
      {600, 3, FleetMode::kLatency, 0, false},     // the same bucket: no flapping
      {300, 1, FleetMode::kLatency, 0, false},
  };
  double switch_ends = -1;
  FleetMode switching_to = mode;
  for (const Phase& p : phases) {
    int switches = 0;
    for (double t = 0; t < p.seconds; t += 2, clock.advance(2)) {
      if (switch_ends >= 0) {  // mid-switch: no samples, no decisions
        if (clock.now_s() >= switch_ends) {
          mode = switching_to;
          c.switch_done(mode, 40);
          switch_ends = -1;
        }
        continue;
      }
      if (const auto want = c.observe(simulate(mode, p.load))) {
        ++switches;
        EXPECT_EQ(c.reason().rfind("measured", 0) == 0, p.measured) << "load " << p.load << ": " << c.reason();
        c.switched(*want);
        switching_to = *want;
        switch_ends = clock.now_s() + 40;
      }
    }
    EXPECT_EQ(switch_ends < 0 ? mode : switching_to, p.expected) << "load " << p.load << ": " << c.reason();
    EXPECT_LE(switches, p.max_switches) << "load " << p.load;
  }
  EXPECT_TRUE(c.estimates().known(FleetMode::kThroughput, ModeEstimates::bucket(40)));
  EXPECT_TRUE(c.estimates().known(FleetMode::kLatency, ModeEstimates::bucket(40)));
}

}  // namespace
}  // namespace sy::policy
