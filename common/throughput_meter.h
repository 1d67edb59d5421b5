// Tokens per second over a sliding window, from a worker's cumulative counters, sampled
// whenever someone asks (a /metrics scrape, the serve log's timer): tokens generated, and
// prompt tokens computed (counted as their chunks run: a rate from prompts accepted minus
// cache hits went negative when a prompt was accepted in one window and its hits were
// known in the next). The time is passed in, so tests drive it.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

namespace sy {

class ThroughputMeter {
 public:
  explicit ThroughputMeter(double window_s = 10) : window_s_(window_s) {}

  struct Rates {
    double generated_per_s = 0;
    double prompt_per_s = 0;  // prompt tokens computed
    double span_s = 0;        // the time the rates are over (0: not enough samples yet)
  };

  // Records the counters at `now_s` (seconds on a monotonic clock) and returns the rates
  // since the oldest sample no older than the window (one sample older is kept as the
  // window's start). Thread-safe.
  Rates sample(double now_s, int64_t generated_total, int64_t prefill_total);

 private:
  struct Sample {
    double t;
    int64_t generated, prompt;
  };
  std::mutex mu_;
  std::deque<Sample> samples_;
  double window_s_;
};

}  // namespace sy
