// The worker's own GPUs for telemetry: which CUDA devices its --device names and where
// they sit (PCI bus ids from the CUDA runtime), so that NVML, which ignores
// CUDA_VISIBLE_DEVICES, reads those GPUs and no others.
#pragma once

#include <string>
#include <vector>

#include "common/metrics.h"
#include "common/telemetry/gpu_telemetry.h"

namespace sy {

// The CUDA ordinals `device` gives `ranks` ranks, each once, in rank order, as
// create_backend reads the name: "cuda" → 0..ranks-1, "cuda:N" → N..N+ranks-1,
// "cuda:A,B,..." → that list. None for "cpu" or a name that is no cuda device.
std::vector<int> cuda_ordinals(const std::string& device, int ranks);

// Each ordinal's PCI bus id (cudaDeviceGetPCIBusId). Empty, with `error` set, when the
// CUDA runtime refuses one or this build has no CUDA.
std::vector<GpuDevice> cuda_gpu_devices(const std::vector<int>& ordinals, std::string& error);

// serve's: switchyard_gpu_* on `registry` for the GPUs `device` gives `ranks` ranks.
// Returns the line to log (start_gpu_metrics's, or why there is no telemetry); empty
// for a worker on the CPU.
std::string start_worker_gpu_metrics(MetricsRegistry& registry, const std::string& device,
                                     int ranks);

}  // namespace sy
