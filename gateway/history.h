// The dashboard's history: one point a second for the last 15 minutes (a ring buffer of
// 900), each the fleet's throughput, latency percentiles, queues, requests in flight,
// prefix hit rate and GPU power, plus events (mode switches, replica starts, restarts)
// to mark on the charts. Served as GET /admin/history (docs/DASHBOARD.md). Times are on
// the injected clock, so tests drive it with a manual one. Core strand only.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "policy/clock.h"

namespace sy::gateway {

// What the gateway reads for one point. Counters are cumulative: the point holds their
// rate since the previous point.
struct HistoryInputs {
  int64_t output_tokens = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  double ttft_p50 = 0, ttft_p99 = 0;  // seconds; 0: no sample yet
  double itl_p50 = 0, itl_p99 = 0;
  int64_t queue_interactive = 0, queue_standard = 0, queue_batch = 0;
  int64_t in_flight = 0;
  std::vector<std::pair<std::string, double>> gpu_power;  // uuid → watts
};

struct HistoryPoint {
  double t = 0;                  // on the clock
  double tok_s = 0;              // output tokens per second since the previous point
  double prefix_hit_rate = 0;    // cached / prompt tokens of requests finished since then; NaN: none
  double ttft_p50 = 0, ttft_p99 = 0, itl_p50 = 0, itl_p99 = 0;
  int64_t queue_interactive = 0, queue_standard = 0, queue_batch = 0;
  int64_t in_flight = 0;
  std::vector<std::pair<std::string, double>> gpu_power;
};

struct HistoryEvent {
  double t = 0;
  std::string kind;  // "mode", "restart", "start", "ready"
  std::string text;
};

class History {
 public:
  static constexpr double kIntervalS = 1.0;
  static constexpr size_t kPoints = 900;  // 15 minutes at 1 s

  explicit History(std::shared_ptr<const policy::Clock> clock, size_t points = kPoints);

  // A point at the clock's now. The first point's rates are 0 (nothing to compare with);
  // counters that went backwards (a reset) count from zero again.
  void record(const HistoryInputs& in);
  // An event at the clock's now, kept while it is inside the window.
  void mark(std::string kind, std::string text);

  size_t size() const { return count_; }
  const HistoryPoint& point(size_t i) const;  // 0: the oldest kept
  const std::vector<HistoryEvent>& events() const { return events_; }

  // Columns, oldest first: "t" (seconds relative to now, ≤ 0), "tok_s", "ttft_p50",
  // "ttft_p99", "itl_p50", "itl_p99", "queue_interactive", "queue_standard",
  // "queue_batch", "in_flight", "prefix_hit_rate" (null where no request finished),
  // "power_watts" (the fleet's sum), "gpu_power" {uuid: [watts or null]}, and "events"
  // [{t, kind, text}]; `interval_s`, `window_s`.
  nlohmann::json json() const;

 private:
  std::shared_ptr<const policy::Clock> clock_;
  std::vector<HistoryPoint> ring_;
  size_t head_ = 0;  // the next slot to write
  size_t count_ = 0;
  std::vector<HistoryEvent> events_;
  bool have_last_ = false;
  HistoryInputs last_;
  double last_t_ = 0;
};

}  // namespace sy::gateway
