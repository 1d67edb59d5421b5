// The fleet's GPUs as its workers report them, keyed by uuid: two workers on one GPU
// (or the ranks of one group sharing a device) show one GPU, and its power counts once
// in the fleet's total. Each replica's latest scrape replaces what it reported before;
// a replica's GPUs are forgotten when it stops reporting (not ready, or silent longer
// than `max_age_s`). Core strand only; times on the gateway's injected clock.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gateway/worker_scrape.h"

namespace sy::gateway {

struct FleetGpu {
  GpuSample sample;                   // the freshest report of this GPU
  std::vector<std::string> replicas;  // ids of the replicas that report it, sorted
  double seen_s = 0;                  // when that freshest report came
};

class GpuTable {
 public:
  explicit GpuTable(double max_age_s = 10) : max_age_s_(max_age_s) {}

  void update(const std::string& replica, std::vector<GpuSample> gpus, double now_s);
  void forget(const std::string& replica);
  void clear() { reports_.clear(); }

  // Every GPU some replica reported within max_age_s, by uuid.
  std::vector<FleetGpu> gpus(double now_s) const;
  // The fleet's power draw: the sum over gpus() of their power (GPUs without a power
  // reading add nothing); 0 with no GPU.
  double power_watts(double now_s) const;

 private:
  struct Report {
    std::vector<GpuSample> gpus;
    double at_s = 0;
  };
  double max_age_s_;
  std::map<std::string, Report> reports_;  // by replica id
};

}  // namespace sy::gateway
