#include "common/telemetry/gpu_metrics.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace sy {
namespace {

struct Family {
  const char* name;
  const char* help;
  double GpuReading::*field;
};

constexpr Family kFamilies[] = {
    {"switchyard_gpu_power_watts", "GPU power draw (NVML).", &GpuReading::power_watts},
    {"switchyard_gpu_power_limit_watts", "GPU enforced power limit (NVML).",
     &GpuReading::power_limit_watts},
    {"switchyard_gpu_memory_used_bytes",
     "GPU memory not free: what processes hold plus the driver's reservation (NVML).",
     &GpuReading::memory_used_bytes},
    {"switchyard_gpu_memory_total_bytes", "GPU memory in all (NVML).",
     &GpuReading::memory_total_bytes},
    {"switchyard_gpu_utilization_ratio",
     "Fraction of NVML's last sample period during which a kernel ran on the GPU.",
     &GpuReading::utilization_ratio},
    {"switchyard_gpu_temperature_celsius", "GPU die temperature (NVML).",
     &GpuReading::temperature_celsius},
};

// "gpu 0 NVIDIA H200 (GPU-…, 0000:19:00.0): 74.1 W of 700 W, 0.5 of 139.8 GiB, 0% busy, 31 C"
std::string describe(const GpuIdentity& g, const GpuReading& r) {
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "%.1f W of %.0f W, %.1f of %.1f GiB, %.0f%% busy, %.0f C",
                r.power_watts, r.power_limit_watts, r.memory_used_bytes / double(1 << 30),
                r.memory_total_bytes / double(1 << 30), r.utilization_ratio * 100,
                r.temperature_celsius);
  return "gpu " + std::to_string(g.ordinal) + " " + g.name + " (" + g.uuid + ", " + g.pci_bus_id +
         "): " + numbers;
}

}  // namespace

void register_gpu_info(MetricsRegistry& registry, const GpuIdentity& gpu) {
  registry
      .gauge("switchyard_gpu_info", "The worker's GPUs: 1 per GPU, identity in the labels.",
             {{"gpu", std::to_string(gpu.ordinal)}, {"uuid", gpu.uuid}, {"name", gpu.name}, {"pci_bus_id", gpu.pci_bus_id}})
      .set(1);
}

void register_gpu_metrics(MetricsRegistry& registry, std::shared_ptr<GpuTelemetry> telemetry) {
  const std::vector<GpuIdentity>& gpus = telemetry->gpus();
  for (const GpuIdentity& g : gpus) register_gpu_info(registry, g);
  for (const Family& f : kFamilies) {
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (std::isnan(telemetry->reading(i).*f.field)) continue;  // not on this GPU
      registry.gauge_fn(
          f.name, f.help, [telemetry, i, field = f.field] { return telemetry->reading(i).*field; },
          {{"gpu", std::to_string(gpus[i].ordinal)}, {"uuid", gpus[i].uuid}});
    }
  }
}

std::string start_gpu_metrics(MetricsRegistry& registry, const std::vector<GpuDevice>& devices,
                              const std::string& nvml_path) {
  if (devices.empty()) return {};
  NvmlLibrary::Opened nvml = NvmlLibrary::open(nvml_path);
  if (!nvml.library) return "gpu telemetry: off (" + nvml.error + ")";
  std::string line = "gpu telemetry: NVML " + nvml_path;
  auto telemetry = std::make_shared<GpuTelemetry>(
      nvml.library, devices, [&line](const std::string& m) { line += "; " + m; });
  for (size_t i = 0; i < telemetry->gpus().size(); ++i)
    line += "; " + describe(telemetry->gpus()[i], telemetry->reading(i));
  register_gpu_metrics(registry, telemetry);
  return line;
}

}  // namespace sy
