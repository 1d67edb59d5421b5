// The power-aware stagger's rule, table-driven: each row feeds one step (a start, a
// reading, a ready) and states whether the next worker may start at that draw.
#include "policy/power_stagger.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sy::policy {
namespace {

enum class Step { kStart, kReading, kReady };

struct Row {
  Step step;
  double watts;
  bool may_start;    // may_start(watts) after the step
  double spike_w;    // spike_w() after the step
};

TEST(PowerStagger, TheNextStartWaitsForRoomForTheMeasuredSpike) {
  PowerStagger p(500);
  const double nan = std::nan("");
  const Row rows[] = {
      {Step::kReading, 100, true, 0},   // nothing measured: the draw itself is within 500
      {Step::kReading, 501, false, 0},  // ... and not above it
      {Step::kStart, 100, false, 0},    // r0 loads from 100 W: one load at a time
      {Step::kReading, 380, false, 0},
      {Step::kReading, 420, false, 0},  // its peak
      {Step::kReading, 200, false, 0},
      {Step::kReady, 400, false, 320},  // spike 420 − 100; 400 + 320 > 500
      {Step::kReading, 181, false, 320},
      {Step::kReading, 180, true, 320},  // 180 + 320 = 500: room
      {Step::kReading, nan, true, 320},  // no reading: the rule cannot apply
      {Step::kStart, 180, false, 320},   // r1 loads from 180 W ...
      {Step::kReading, nan, false, 320},
      {Step::kReading, 300, false, 320},  // ... a smaller spike (120)
      {Step::kReady, 190, false, 320},    // the largest spike stays: 190 + 320 > 500
      {Step::kReading, 150, true, 320},
  };
  int n = 0;
  for (const Row& r : rows) {
    ++n;
    switch (r.step) {
      case Step::kStart: p.load_started("r" + std::to_string(n), r.watts); break;
      case Step::kReading: p.observe(r.watts); break;
      case Step::kReady: p.load_finished(); break;
    }
    EXPECT_EQ(p.may_start(r.watts), r.may_start) << "row " << n;
    EXPECT_DOUBLE_EQ(p.spike_w(), r.spike_w) << "row " << n;
  }
  ASSERT_EQ(p.spikes().size(), 2u);
  EXPECT_DOUBLE_EQ(p.spikes()[0].baseline_w, 100);
  EXPECT_DOUBLE_EQ(p.spikes()[0].peak_w, 420);
  EXPECT_DOUBLE_EQ(p.spikes()[1].spike_w(), 120);
}

TEST(PowerStagger, OffWithoutALimit) {
  PowerStagger p(0);
  EXPECT_FALSE(p.enabled());
  p.load_started("r0", 100);
  EXPECT_TRUE(p.may_start(1e9));
}

TEST(PowerStagger, ALoadThatDrawsLessLeavesNoNegativeSpike) {
  PowerStagger p(500);
  p.load_started("r0", 300);
  p.observe(250);
  p.load_finished();
  EXPECT_DOUBLE_EQ(p.spike_w(), 0);
  p.load_started("r1", 100);
  p.load_started("r2", 100);  // r1's load is closed first
  EXPECT_EQ(p.spikes().size(), 2u);
  EXPECT_TRUE(p.loading());
}

}  // namespace
}  // namespace sy::policy
