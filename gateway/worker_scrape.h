// What the gateway reads from a worker's /metrics (Prometheus text): the unlabelled
// engine gauges that routing and the dashboard show, and the labelled switchyard_gpu_*
// series of the worker's GPUs (common/telemetry/gpu_metrics.h), one sample per GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sy::gateway {

// One GPU as a worker reports it; NaN for a reading it has no series for.
struct GpuSample {
  std::string uuid;        // the key: two workers on one GPU report the same uuid
  std::string gpu;         // the worker's CUDA ordinal (its `gpu` label)
  std::string name;        // from switchyard_gpu_info; empty without it
  std::string pci_bus_id;  // from switchyard_gpu_info
  double power_watts;
  double power_limit_watts;
  double memory_used_bytes;
  double memory_total_bytes;
  double utilization_ratio;
  double temperature_celsius;
};

struct WorkerScrape {
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_host_blocks_total = 0;  // the KV host tier's slots (0: none, or not in use yet)
  int64_t requests_running = 0;
  int64_t requests_waiting = 0;
  std::vector<GpuSample> gpus;  // in the order first seen; none from a CPU worker
};

// Reads the exposition text. Lines it does not know are skipped; a GPU series without a
// uuid label is ignored (it could not be told apart from another worker's).
WorkerScrape parse_worker_metrics(std::string_view text);

}  // namespace sy::gateway
