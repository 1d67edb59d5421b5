// Readings of a process's own GPUs through NVML: power draw and limit, memory used and
// total, utilization and temperature. GPUs are named by PCI bus id because NVML counts
// every GPU of the machine while CUDA ordinals follow CUDA_VISIBLE_DEVICES; the bus id is
// what both agree on.
//
// Thread-safe. Readings are taken for all GPUs at once and kept for up to kMaxAge, so a
// scrape that reads each series costs one NVML round per GPU.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/telemetry/nvml_library.h"

namespace sy {

// A GPU to watch: how this process names it (the CUDA ordinal) and where it sits.
struct GpuDevice {
  int ordinal = 0;
  // "0000:3B:00.0", as cudaDeviceGetPCIBusId writes it. Empty: `ordinal` is NVML's index
  // (PCI bus order; CUDA's own order where CUDA_DEVICE_ORDER=PCI_BUS_ID or the GPUs are
  // alike), for a process without CUDA such as the gateway.
  std::string pci_bus_id;
};

// A watched GPU as NVML knows it.
struct GpuIdentity {
  int ordinal = 0;
  std::string pci_bus_id;
  std::string uuid;  // "GPU-…", stable across processes and reboots
  std::string name;  // the product, e.g. "NVIDIA H200"
};

// One reading; NaN where NVML gave no answer.
struct GpuReading {
  double power_watts;
  double power_limit_watts;  // the enforced limit
  double memory_used_bytes;
  double memory_total_bytes;
  double utilization_ratio;  // 0..1, time a kernel ran during NVML's last sample period
  double temperature_celsius;
};

class GpuTelemetry {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  static constexpr std::chrono::milliseconds kMaxAge{1000};

  // Looks each of `devices` up by bus id; one NVML does not find is left out and `log`
  // gets a line saying so.
  GpuTelemetry(std::shared_ptr<const NvmlLibrary> nvml, const std::vector<GpuDevice>& devices,
               const std::function<void(const std::string&)>& log,
               Clock clock = std::chrono::steady_clock::now);

  const std::vector<GpuIdentity>& gpus() const { return gpus_; }
  // gpus()[i]'s reading, taken afresh (for every GPU) when the last is older than kMaxAge.
  GpuReading reading(size_t i);

 private:
  GpuReading read_now(nvmlDevice_t device) const;

  const std::shared_ptr<const NvmlLibrary> nvml_;
  const Clock clock_;
  std::vector<GpuIdentity> gpus_;
  std::vector<nvmlDevice_t> handles_;  // per gpus_ entry
  std::mutex mu_;                      // guards what follows
  std::vector<GpuReading> readings_;
  std::chrono::steady_clock::time_point read_at_;
  bool have_readings_ = false;
};

}  // namespace sy
