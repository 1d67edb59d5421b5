#include "gateway/gpu_table.h"

#include <algorithm>
#include <cmath>

namespace sy::gateway {

void GpuTable::update(const std::string& replica, std::vector<GpuSample> gpus, double now_s) {
  if (gpus.empty()) {
    reports_.erase(replica);
    return;
  }
  reports_[replica] = Report{std::move(gpus), now_s};
}

void GpuTable::forget(const std::string& replica) { reports_.erase(replica); }

std::vector<FleetGpu> GpuTable::gpus(double now_s) const {
  std::map<std::string, FleetGpu> by_uuid;
  for (const auto& [replica, report] : reports_) {
    if (now_s - report.at_s > max_age_s_) continue;
    for (const GpuSample& g : report.gpus) {
      auto [it, fresh] = by_uuid.try_emplace(g.uuid);
      FleetGpu& f = it->second;
      if (fresh || report.at_s > f.seen_s) {
        f.sample = g;
        f.seen_s = report.at_s;
      }
      f.replicas.push_back(replica);  // reports_ is ordered by id: stays sorted
    }
  }
  std::vector<FleetGpu> out;
  for (auto& [uuid, f] : by_uuid) out.push_back(std::move(f));
  return out;
}

double GpuTable::power_watts(double now_s) const {
  double sum = 0;
  for (const FleetGpu& g : gpus(now_s))
    if (std::isfinite(g.sample.power_watts)) sum += g.sample.power_watts;
  return sum;
}

}  // namespace sy::gateway
