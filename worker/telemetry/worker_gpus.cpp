#include "worker/telemetry/worker_gpus.h"

#include <algorithm>
#include <sstream>

#include "common/telemetry/gpu_metrics.h"

#ifdef SY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sy {

std::vector<int> cuda_ordinals(const std::string& device, int ranks) {
  std::vector<int> listed;
  if (device == "cuda") {
    listed.push_back(0);
  } else if (device.rfind("cuda:", 0) == 0) {
    const std::string list = device.substr(5);
    if (list.empty() || list.back() == ',') return {};  // getline would miss the empty last item
    std::istringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      if (item.empty() || item.size() > 3 || item.find_first_not_of("0123456789") != std::string::npos)
        return {};
      listed.push_back(std::stoi(item));
    }
  }
  if (listed.size() == 1)  // a first device: the ranks take it and the ones after it
    for (int r = 1; r < ranks; ++r) listed.push_back(listed[0] + r);
  std::vector<int> out;
  for (int d : listed)
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

std::vector<GpuDevice> cuda_gpu_devices(const std::vector<int>& ordinals, std::string& error) {
  std::vector<GpuDevice> out;
#ifdef SY_HAVE_CUDA
  for (int d : ordinals) {
    char bus_id[32] = {};
    if (const cudaError_t e = cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, d); e != cudaSuccess) {
      error = "cudaDeviceGetPCIBusId(" + std::to_string(d) + "): " + cudaGetErrorString(e);
      return {};
    }
    out.push_back({d, bus_id});
  }
#else
  if (!ordinals.empty()) error = "this build has no CUDA";
#endif
  return out;
}

std::string start_worker_gpu_metrics(MetricsRegistry& registry, const std::string& device,
                                     int ranks) {
  const std::vector<int> ordinals = cuda_ordinals(device, ranks);
  if (ordinals.empty()) return {};
  std::string error;
  const std::vector<GpuDevice> gpus = cuda_gpu_devices(ordinals, error);
  if (!error.empty()) return "gpu telemetry: off (" + error + ")";
  return start_gpu_metrics(registry, gpus);
}

}  // namespace sy
