#include "gateway/startup_power.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace sy::gateway {
namespace {

nlohmann::json watts_or_null(double w) { return std::isfinite(w) ? nlohmann::json(w) : nlohmann::json(nullptr); }

}  // namespace

StartupPower::StartupPower(const FleetConfig& config, std::function<void(const std::string&)> log)
    : log_(std::move(log)), stagger_(config.startup.max_power_w) {
  if (!stagger_.enabled()) return;
  std::vector<GpuDevice> devices;
  const std::vector<std::string>& listed = config.startup.power_gpus.empty() ? config.devices : config.startup.power_gpus;
  std::set<std::string> seen;  // a GPU shared by several replicas is listed once per replica
  for (const std::string& g : listed) {
    if (g == "cpu" || !seen.insert(g).second) continue;
    if (g.find(':') != std::string::npos) devices.push_back({static_cast<int>(devices.size()), g});
    else devices.push_back({std::stoi(g), ""});  // an NVML index
  }
  NvmlLibrary::Opened nvml = NvmlLibrary::open(config.nvml_library);
  if (!nvml.library) {
    log_("power-aware stagger: no NVML (" + nvml.error + "); workers start on readiness alone");
    return;
  }
  gpus_ = std::make_unique<GpuTelemetry>(nvml.library, devices, log_);
  std::string line = "power-aware stagger: at most " + std::to_string(static_cast<int64_t>(config.startup.max_power_w)) + " W over";
  for (const GpuIdentity& g : gpus_->gpus()) line += " " + g.uuid;
  log_(line);
}

double StartupPower::draw() {
  if (!gpus_ || gpus_->gpus().empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  bool any = false;
  for (size_t i = 0; i < gpus_->gpus().size(); ++i) {
    const double w = gpus_->reading(i).power_watts;
    if (std::isfinite(w)) sum += w, any = true;
  }
  const double out = any ? sum : std::numeric_limits<double>::quiet_NaN();
  stagger_.observe(out);
  if (any) last_draw_ = sum;
  return out;
}

bool StartupPower::may_start() {
  if (!stagger_.enabled()) return true;
  const double w = draw();
  const bool yes = stagger_.may_start(w);
  if (!yes && !waiting_ && !stagger_.loading())
    log_("power-aware stagger: the next worker waits: " + std::to_string(static_cast<int64_t>(w)) + " W drawn + " +
         std::to_string(static_cast<int64_t>(stagger_.spike_w())) + " W measured spike > " +
         std::to_string(static_cast<int64_t>(stagger_.max_power_w())) + " W");
  waiting_ = !yes && !stagger_.loading();
  return yes;
}

void StartupPower::on_replica_change(const ReplicaInfo& r) {
  if (!stagger_.enabled()) return;
  if (r.phase == ReplicaPhase::kStarting) {
    stagger_.load_started(r.id, draw());
    waiting_ = false;
    return;
  }
  if (stagger_.loading() && stagger_.current().replica == r.id) {
    draw();  // a last reading for the peak
    stagger_.load_finished();
    log_("power-aware stagger: " + r.id + " loaded: " + std::to_string(static_cast<int64_t>(stagger_.spikes().back().spike_w())) +
         " W spike (" + std::to_string(static_cast<int64_t>(stagger_.spikes().back().baseline_w)) + " → " +
         std::to_string(static_cast<int64_t>(stagger_.spikes().back().peak_w)) + " W)");
  }
}

std::vector<GpuSample> StartupPower::samples() {
  std::vector<GpuSample> out;
  if (!gpus_) return out;
  draw();  // the same readings feed a loading worker's peak
  for (size_t i = 0; i < gpus_->gpus().size(); ++i) {
    const GpuIdentity& g = gpus_->gpus()[i];
    const GpuReading x = gpus_->reading(i);
    out.push_back({g.uuid, std::to_string(g.ordinal), g.name, g.pci_bus_id, x.power_watts, x.power_limit_watts, x.memory_used_bytes,
                   x.memory_total_bytes, x.utilization_ratio, x.temperature_celsius});
  }
  return out;
}

nlohmann::json StartupPower::json() const {
  nlohmann::json spikes = nlohmann::json::array();
  for (const policy::LoadSpike& s : stagger_.spikes())
    spikes.push_back({{"replica", s.replica}, {"baseline_w", s.baseline_w}, {"peak_w", s.peak_w}, {"spike_w", s.spike_w()}});
  nlohmann::json loading = nullptr;
  if (stagger_.loading())
    loading = {{"replica", stagger_.current().replica}, {"baseline_w", stagger_.current().baseline_w}, {"peak_w", stagger_.current().peak_w}};
  return {{"max_power_w", stagger_.max_power_w()},
          {"measuring", gpus_ != nullptr && !gpus_->gpus().empty()},
          {"draw_w", watts_or_null(gpus_ ? last_draw_ : std::nan(""))},
          {"spike_w", stagger_.spike_w()},
          {"spikes", spikes},
          {"loading", loading},
          {"waiting_for_power", waiting_}};
}

}  // namespace sy::gateway
