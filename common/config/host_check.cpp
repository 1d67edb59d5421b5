#include "common/config/host_check.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

namespace sy {
namespace {

namespace fs = std::filesystem;

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

std::optional<std::string> model_problem(const std::string& model) {
  std::error_code ec;
  const fs::file_status st = fs::status(model, ec);
  if (!fs::exists(st))
    return quoted(model) + " does not exist (a GGUF file or a Hugging Face directory)";
  if (!fs::is_regular_file(st) && !fs::is_directory(st))
    return quoted(model) + " is neither a file nor a directory";
  if (::access(model.c_str(), R_OK) != 0) return quoted(model) + " cannot be read";
  return std::nullopt;
}

std::optional<std::string> binary_problem(const std::string& binary) {
  if (binary.empty()) return "is empty";
  std::error_code ec;
  const fs::file_status st = fs::status(binary, ec);
  if (!fs::exists(st))
    return quoted(binary) +
           " does not exist (build it: cmake --build build --target switchyard-worker)";
  if (fs::is_directory(st)) return quoted(binary) + " is a directory, not a program";
  if (::access(binary.c_str(), X_OK) != 0) return quoted(binary) + " is not executable";
  return std::nullopt;
}

std::optional<std::string> device_problem(const std::string& id, const HostDevices& host) {
  if (id == "cpu") return std::nullopt;
  // FleetConfig::validate has checked that GPU ids are indexes.
  const long index = std::strtol(id.c_str(), nullptr, 10);
  if (index < host.gpus) return std::nullopt;
  if (host.gpus == 0)
    return "GPU " + id + " does not exist: this machine has no NVIDIA GPU (use devices: [cpu])";
  return "GPU " + id + " does not exist: this machine has " + std::to_string(host.gpus) +
         " (ids 0 to " + std::to_string(host.gpus - 1) + ", from " + host.source + ")";
}

// MemTotal in bytes; 0 when /proc/meminfo does not say.
int64_t memory_total() {
  std::ifstream in("/proc/meminfo");
  for (std::string key; in >> key;) {
    int64_t kib = 0;
    if (key == "MemTotal:" && in >> kib) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

std::optional<std::string> host_tier_problem(const FleetConfig& config, const HostDevices& host) {
  if (!(config.worker.kv_host_gb > 0) || host.memory_bytes <= 0) return std::nullopt;
  int32_t ranks = 0;
  for (const auto& [name, m] : config.modes) ranks = std::max(ranks, m.replicas * m.tp * m.pcp);
  const double need = ranks * config.worker.kv_host_gb, have = static_cast<double>(host.memory_bytes) / (1 << 30);
  if (need <= 0.75 * have) return std::nullopt;
  char what[256];
  std::snprintf(what, sizeof what,
                "%d ranks × %g GiB = %.1f GiB of pinned host memory, more than 3/4 of this machine's %.1f GiB",
                ranks, config.worker.kv_host_gb, need, have);
  return what;
}

int32_t count_entries(const fs::path& dir, bool (*wanted)(const std::string&)) {
  std::error_code ec;
  int32_t n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    n += wanted(it->path().filename().string());
  return n;
}

}  // namespace

HostDevices probe_host_devices() {
  const int32_t proc =
      count_entries("/proc/driver/nvidia/gpus", [](const std::string&) { return true; });
  if (proc > 0) return {proc, "/proc/driver/nvidia/gpus", memory_total()};
  // /dev/nvidia0, /dev/nvidia1, ...: not nvidiactl, nvidia-uvm, nvidia-modeset.
  const int32_t nodes = count_entries("/dev", [](const std::string& name) {
    if (name.size() <= 6 || name.compare(0, 6, "nvidia") != 0) return false;
    for (size_t i = 6; i < name.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
    return true;
  });
  return {nodes, "/dev/nvidia<N>", memory_total()};
}

std::optional<std::pair<std::string, std::string>> host_problem(const FleetConfig& config,
                                                                const HostDevices& host) {
  if (auto p = model_problem(config.model)) return std::pair{std::string("model"), *p};
  if (auto p = binary_problem(config.worker.binary))
    return std::pair{std::string("worker.binary"), *p};
  for (size_t i = 0; i < config.devices.size(); ++i)
    if (auto p = device_problem(config.devices[i], host))
      return std::pair{"devices[" + std::to_string(i) + "]", *p};
  if (auto p = host_tier_problem(config, host)) return std::pair{std::string("worker.kv_host_gb"), *p};
  return std::nullopt;
}

}  // namespace sy
