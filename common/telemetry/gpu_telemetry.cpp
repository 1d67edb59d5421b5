#include "common/telemetry/gpu_telemetry.h"

#include <cstring>
#include <limits>
#include <utility>

namespace sy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string read_string(nvml::StringFn fn, nvmlDevice_t device) {
  char buf[nvml::kStringBuffer] = {};
  if (fn(device, buf, sizeof buf) != nvml::kSuccess) return {};
  return std::string(buf, strnlen(buf, sizeof buf));
}

double milliwatts(nvml::UintFn fn, nvmlDevice_t device) {
  unsigned int mw = 0;
  return fn(device, &mw) == nvml::kSuccess ? mw / 1000.0 : kNaN;
}

}  // namespace

GpuTelemetry::GpuTelemetry(std::shared_ptr<const NvmlLibrary> nvml,
                           const std::vector<GpuDevice>& devices,
                           const std::function<void(const std::string&)>& log, Clock clock)
    : nvml_(std::move(nvml)), clock_(std::move(clock)) {
  const nvml::Api& api = nvml_->api();
  for (const GpuDevice& d : devices) {
    nvmlDevice_t handle = nullptr;
    const nvmlReturn_t rc = d.pci_bus_id.empty() ? api.handle_by_index(static_cast<unsigned>(d.ordinal), &handle)
                                                 : api.handle_by_pci_bus_id(d.pci_bus_id.c_str(), &handle);
    if (rc != nvml::kSuccess) {
      log("gpu " + std::to_string(d.ordinal) + " (" + (d.pci_bus_id.empty() ? "NVML index" : d.pci_bus_id) +
          "): not in NVML, no telemetry for it: " + nvml_->describe(rc));
      continue;
    }
    gpus_.push_back({d.ordinal, d.pci_bus_id, read_string(api.uuid, handle),
                     read_string(api.name, handle)});
    handles_.push_back(handle);
  }
}

GpuReading GpuTelemetry::read_now(nvmlDevice_t device) const {
  const nvml::Api& api = nvml_->api();
  GpuReading r{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  r.power_watts = milliwatts(api.power_usage, device);
  r.power_limit_watts = milliwatts(api.enforced_power_limit, device);
  if (nvmlMemory_t m{}; api.memory_info(device, &m) == nvml::kSuccess) {
    r.memory_used_bytes = static_cast<double>(m.used);
    r.memory_total_bytes = static_cast<double>(m.total);
  }
  if (nvmlUtilization_t u{}; api.utilization(device, &u) == nvml::kSuccess)
    r.utilization_ratio = u.gpu / 100.0;
  if (unsigned int c = 0; api.temperature(device, nvml::kTemperatureGpu, &c) == nvml::kSuccess)
    r.temperature_celsius = c;
  return r;
}

GpuReading GpuTelemetry::reading(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = clock_();
  if (!have_readings_ || now - read_at_ >= kMaxAge) {
    readings_.clear();
    for (nvmlDevice_t h : handles_) readings_.push_back(read_now(h));
    read_at_ = now;
    have_readings_ = true;
  }
  return readings_.at(i);
}

}  // namespace sy
