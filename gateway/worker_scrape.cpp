#include "gateway/worker_scrape.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

namespace sy::gateway {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Line {
  std::string_view name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = kNaN;
};

// `name{k="v",...} value` or `name value`; false for comments, blanks and junk.
bool parse_line(std::string_view s, Line& out) {
  if (s.empty() || s[0] == '#') return false;
  size_t i = 0;
  while (i < s.size() && s[i] != '{' && s[i] != ' ') ++i;
  out.name = s.substr(0, i);
  out.labels.clear();
  if (i < s.size() && s[i] == '{') {
    ++i;
    while (i < s.size() && s[i] != '}') {
      const size_t eq = s.find('=', i);
      if (eq == std::string_view::npos || eq + 1 >= s.size() || s[eq + 1] != '"') return false;
      std::string key(s.substr(i, eq - i)), value;
      size_t j = eq + 2;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          ++j;
          value += s[j] == 'n' ? '\n' : s[j];
        } else {
          value += s[j];
        }
      }
      if (j >= s.size()) return false;
      out.labels.emplace_back(std::move(key), std::move(value));
      i = j + 1;
      if (i < s.size() && s[i] == ',') ++i;
    }
    if (i >= s.size()) return false;
    ++i;  // '}'
  }
  while (i < s.size() && s[i] == ' ') ++i;
  if (i >= s.size()) return false;
  const std::string number(s.substr(i, s.find(' ', i) - i));  // a timestamp may follow
  char* end = nullptr;
  out.value = std::strtod(number.c_str(), &end);
  return end != number.c_str();
}

std::string label(const Line& l, std::string_view key) {
  for (const auto& [k, v] : l.labels)
    if (k == key) return v;
  return {};
}

GpuSample& gpu_for(WorkerScrape& w, const std::string& uuid) {
  for (GpuSample& g : w.gpus)
    if (g.uuid == uuid) return g;
  w.gpus.push_back({uuid, "", "", "", kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  return w.gpus.back();
}

}  // namespace

WorkerScrape parse_worker_metrics(std::string_view text) {
  WorkerScrape w;
  static const std::pair<std::string_view, double GpuSample::*> kGpuSeries[] = {
      {"switchyard_gpu_power_watts", &GpuSample::power_watts},
      {"switchyard_gpu_power_limit_watts", &GpuSample::power_limit_watts},
      {"switchyard_gpu_memory_used_bytes", &GpuSample::memory_used_bytes},
      {"switchyard_gpu_memory_total_bytes", &GpuSample::memory_total_bytes},
      {"switchyard_gpu_utilization_ratio", &GpuSample::utilization_ratio},
      {"switchyard_gpu_temperature_celsius", &GpuSample::temperature_celsius},
  };
  static const std::pair<std::string_view, int64_t WorkerScrape::*> kEngineSeries[] = {
      {"switchyard_worker_kv_blocks_used", &WorkerScrape::kv_blocks_used},
      {"switchyard_worker_kv_blocks_capacity", &WorkerScrape::kv_blocks_total},
      {"switchyard_worker_kv_host_blocks_capacity", &WorkerScrape::kv_host_blocks_total},
      {"switchyard_worker_requests_running", &WorkerScrape::requests_running},
      {"switchyard_worker_requests_waiting", &WorkerScrape::requests_waiting},
  };
  Line l;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view s = text.substr(pos, end - pos);
    pos = end + 1;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (!parse_line(s, l)) continue;
    if (l.labels.empty()) {
      for (const auto& [name, field] : kEngineSeries)
        if (l.name == name && std::isfinite(l.value)) w.*field = static_cast<int64_t>(l.value);
      continue;
    }
    if (l.name.rfind("switchyard_gpu_", 0) != 0) continue;
    const std::string uuid = label(l, "uuid");
    if (uuid.empty()) continue;
    if (l.name == "switchyard_gpu_info") {
      GpuSample& g = gpu_for(w, uuid);
      g.gpu = label(l, "gpu");
      g.name = label(l, "name");
      g.pci_bus_id = label(l, "pci_bus_id");
      continue;
    }
    for (const auto& [name, field] : kGpuSeries) {
      if (l.name != name) continue;
      GpuSample& g = gpu_for(w, uuid);
      g.*field = l.value;
      if (g.gpu.empty()) g.gpu = label(l, "gpu");
    }
  }
  return w;
}

}  // namespace sy::gateway
