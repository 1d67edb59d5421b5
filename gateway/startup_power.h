// The gateway's own view of GPU power for the power-aware stagger (startup.max_power_w):
// it reads NVML itself (common/telemetry, opened at run time) because a loading worker
// does not answer /metrics yet. It watches startup.power_gpus (or the fleet's devices as
// NVML indexes), follows the supervisor's starts and readiness to measure each load's
// spike, and answers the supervisor's start gate with policy/power_stagger.h's rule.
// Core strand only.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/config/fleet_config.h"
#include "common/telemetry/gpu_telemetry.h"
#include "gateway/supervisor.h"
#include "gateway/worker_scrape.h"
#include "policy/power_stagger.h"

namespace sy::gateway {

class StartupPower {
 public:
  // Off (every start allowed, no NVML opened) unless config.startup.max_power_w > 0. When
  // NVML or a GPU cannot be opened, `log` says so and the stagger falls back to readiness.
  StartupPower(const FleetConfig& config, std::function<void(const std::string&)> log);

  bool enabled() const { return stagger_.enabled(); }
  // The watched GPUs' draw now (watts); NaN without a reading.
  double draw();
  // The supervisor's start gate: whether the next worker may start now.
  bool may_start();
  // Follows the supervisor: a spawn opens a load, the loading replica's readiness (or its
  // failure) closes it.
  void on_replica_change(const ReplicaInfo& r);
  // The watched GPUs' latest readings, as a worker would report them (for the GPU table
  // and the history, which thus show power while workers load); also a reading for the
  // loading worker's peak. The gateway calls it every second.
  std::vector<GpuSample> samples();
  // For /admin/status: the limit, the measured spikes, the open load, whether a start waits.
  nlohmann::json json() const;

 private:
  std::function<void(const std::string&)> log_;
  policy::PowerStagger stagger_;
  std::unique_ptr<GpuTelemetry> gpus_;
  bool waiting_ = false;  // the last gate said no
  double last_draw_ = 0;
};

}  // namespace sy::gateway
