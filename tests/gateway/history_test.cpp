// The dashboard's history on a manual clock: rates from counter deltas, the ring's 900
// one-second points, events kept while inside the window, the JSON columns.
#include "gateway/history.h"

#include <gtest/gtest.h>

namespace sy::gateway {
namespace {

struct HistoryTest : ::testing::Test {
  std::shared_ptr<policy::ManualClock> clock = std::make_shared<policy::ManualClock>(1000);
  History history{clock};
};

TEST_F(HistoryTest, RatesComeFromCounterDeltas) {
  struct Row {
    double advance_s;
    int64_t output, prompt, cached;
    double tok_s;
    double hit_rate;  // -1: none (no request finished in the interval)
  };
  const Row rows[] = {
      {0, 100, 0, 0, 0, -1},        // the first point has nothing to compare with
      {1, 150, 1000, 250, 50, 0.25},
      {2, 250, 1000, 250, 50, -1},  // a late tick: 100 tokens over 2 s
      {1, 250, 1400, 650, 0, 1.0},
      {1, 40, 100, 0, 40, 0},       // counters began again (gateway state reset)
  };
  for (const Row& r : rows) {
    clock->advance(r.advance_s);
    HistoryInputs in;
    in.output_tokens = r.output;
    in.prompt_tokens = r.prompt;
    in.cached_tokens = r.cached;
    history.record(in);
    const HistoryPoint& p = history.point(history.size() - 1);
    EXPECT_DOUBLE_EQ(p.t, clock->now_s());
    EXPECT_DOUBLE_EQ(p.tok_s, r.tok_s) << "at " << clock->now_s();
    if (r.hit_rate < 0) {
      EXPECT_TRUE(std::isnan(p.prefix_hit_rate)) << "at " << clock->now_s();
    } else {
      EXPECT_DOUBLE_EQ(p.prefix_hit_rate, r.hit_rate) << "at " << clock->now_s();
    }
  }
}

TEST_F(HistoryTest, KeepsFifteenMinutesAtOneSecond) {
  for (int i = 0; i < 1000; ++i) {
    HistoryInputs in;
    in.in_flight = i;
    history.record(in);
    clock->advance(1);
  }
  ASSERT_EQ(history.size(), History::kPoints);
  EXPECT_EQ(history.point(0).in_flight, 100) << "the oldest 100 points were overwritten";
  EXPECT_EQ(history.point(History::kPoints - 1).in_flight, 999);
  const auto j = history.json();
  ASSERT_EQ(j["t"].size(), History::kPoints);
  EXPECT_DOUBLE_EQ(j["t"][0].get<double>(), -900.0);  // the clock is 1 s past the last point
  EXPECT_DOUBLE_EQ(j["t"][History::kPoints - 1].get<double>(), -1.0);
  EXPECT_DOUBLE_EQ(j["window_s"].get<double>(), 900.0);
}

TEST_F(HistoryTest, EventsStayWhileInsideTheWindow) {
  history.mark("start", "r0 starting");  // before any point: kept
  history.record({});
  clock->advance(100);
  history.mark("mode", "throughput → latency: draining");
  history.record({});
  ASSERT_EQ(history.events().size(), 2u);
  clock->advance(850);  // the first event is now 950 s old
  history.record({});
  ASSERT_EQ(history.events().size(), 1u);
  EXPECT_EQ(history.events()[0].kind, "mode");
  const auto j = history.json();
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["events"][0]["t"].get<double>(), -850.0);
  EXPECT_EQ(j["events"][0]["text"], "throughput → latency: draining");
}

TEST_F(HistoryTest, JsonColumnsPerGpuAndFleetPower) {
  HistoryInputs in;
  in.queue_interactive = 1;
  in.queue_standard = 2;
  in.queue_batch = 3;
  in.ttft_p50 = 0.1;
  in.ttft_p99 = 0.5;
  in.itl_p50 = 0.01;
  in.itl_p99 = 0.02;
  in.gpu_power = {{"GPU-a", 100}};
  history.record(in);
  clock->advance(1);
  in.gpu_power = {{"GPU-a", 120}, {"GPU-b", 80}};  // a second GPU appears
  history.record(in);
  const auto j = history.json();
  EXPECT_EQ(j["power_watts"], nlohmann::json({100.0, 200.0}));
  EXPECT_EQ(j["gpu_power"]["GPU-a"], nlohmann::json({100.0, 120.0}));
  EXPECT_EQ(j["gpu_power"]["GPU-b"], nlohmann::json({nullptr, 80.0}));
  EXPECT_EQ(j["prefix_hit_rate"], nlohmann::json({nullptr, nullptr}));
  EXPECT_EQ(j["queue_batch"], nlohmann::json({3, 3}));
  EXPECT_EQ(j["ttft_p99"], nlohmann::json({0.5, 0.5}));
  EXPECT_EQ(j["itl_p50"], nlohmann::json({0.01, 0.01}));
  for (const char* column : {"t", "tok_s", "ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "queue_interactive", "queue_standard",
                             "queue_batch", "in_flight", "prefix_hit_rate", "power_watts"})
    EXPECT_EQ(j[column].size(), 2u) << column;
}

}  // namespace
}  // namespace sy::gateway
