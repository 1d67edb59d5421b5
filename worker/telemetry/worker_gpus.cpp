#include "worker/telemetry/worker_gpus.h"

#include <algorithm>
#include <stdexcept>

#include "common/telemetry/gpu_metrics.h"
#include "worker/backend/backend.h"

#ifdef SY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sy {

std::vector<int> cuda_ordinals(const std::string& device, int ranks) {
  std::vector<int> listed;
  try {
    listed = cuda_devices(device, ranks);  // as create_backend reads the name
  } catch (const std::invalid_argument&) {
    return {};  // create_backend refuses it too
  }
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
