// GPU telemetry on /metrics: per watched GPU, labeled {gpu="<CUDA ordinal>", uuid="GPU-…"},
//   switchyard_gpu_power_watts             power draw
//   switchyard_gpu_power_limit_watts       the enforced power limit
//   switchyard_gpu_memory_used_bytes       device memory not free (processes and the
//                                          driver's reservation, ~0.6 GiB on an H200)
//   switchyard_gpu_memory_total_bytes      device memory
//   switchyard_gpu_utilization_ratio       0..1, time a kernel ran (NVML's sample period)
//   switchyard_gpu_temperature_celsius     die temperature
// and switchyard_gpu_info{gpu, uuid, name, pci_bus_id} 1. Values are read at scrape time
// (GpuTelemetry keeps them up to a second). A reading NVML does not give for a GPU when
// registered (a product without a power sensor, say) has no series; one that fails later
// reads NaN.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/telemetry/gpu_telemetry.h"

namespace sy {

void register_gpu_metrics(MetricsRegistry& registry, std::shared_ptr<GpuTelemetry> telemetry);

// switchyard_gpu_info{gpu, uuid, name, pci_bus_id} 1 for one GPU: what the gateway keys a
// GPU by (two workers reporting one uuid share it). register_gpu_metrics calls it per GPU;
// the simulated worker, for the GPU its shared prefill queue stands for.
void register_gpu_info(MetricsRegistry& registry, const GpuIdentity& gpu);

// Opens NVML at `nvml_path`, watches `devices` and registers their series. Returns the
// line to log: each GPU watched with a first reading, or why there is no GPU telemetry
// (then `registry` gets no switchyard_gpu_* series). Empty, and NVML left unopened, when
// `devices` is.
std::string start_gpu_metrics(MetricsRegistry& registry, const std::vector<GpuDevice>& devices,
                              const std::string& nvml_path = NvmlLibrary::kDefaultPath);

}  // namespace sy
