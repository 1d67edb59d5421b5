// One prefill queue shared by simulated workers in separate processes, as the replicas
// on one GPU share its compute: the time the queue is free again lives in a small file,
// read and advanced under an exclusive flock. Times are steady_clock (CLOCK_MONOTONIC),
// one clock for every process on the machine.
#pragma once

#include <string>

namespace sy::sim {

class SharedTimeline {
 public:
  // Opens (creating) the file at `path`; throws std::runtime_error when it cannot.
  explicit SharedTimeline(const std::string& path);
  ~SharedTimeline();
  SharedTimeline(const SharedTimeline&) = delete;
  SharedTimeline& operator=(const SharedTimeline&) = delete;

  // Queues `ms` of work behind what every sharer queued; returns the milliseconds from
  // now until it is done.
  double queue(double ms);

 private:
  int fd_ = -1;
};

}  // namespace sy::sim
