// Startup checks of a fleet description against the machine it is about to run on: the
// files it names exist (model, worker.binary) and its GPU ids are GPUs this machine has.
// They run in the gateway before any worker is spawned, so that a mistake is one line
// naming the field instead of workers that restart forever (exit status 127) or fail to
// load. The gateway never links CUDA: GPUs are counted from the NVIDIA driver's files.
// The KV host tier's pinned memory (worker.kv_host_gb per rank) must fit the machine's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/config/fleet_config.h"

namespace sy {

// The NVIDIA GPUs this machine shows, and where that count was read (for messages).
struct HostDevices {
  int32_t gpus = 0;
  std::string source;
  int64_t memory_bytes = 0;  // MemTotal of /proc/meminfo; 0: unknown (not checked)
};

// Counts the GPUs in /proc/driver/nvidia/gpus (one folder per GPU), else the
// /dev/nvidia<N> device nodes; none of either: no GPU. Reads the memory size.
HostDevices probe_host_devices();

// The first reason `config` cannot start on a machine with `host`'s devices, as
// {field, what is wrong}; none when the model and worker.binary exist (the binary
// executable), every GPU id in `devices` is below `host.gpus` and the largest mode's
// ranks (replicas × tp × pcp) × worker.kv_host_gb take at most 3/4 of the host's memory. Paths are checked as
// they are (FleetConfig::load already made the file's relative ones absolute).
std::optional<std::pair<std::string, std::string>> host_problem(const FleetConfig& config,
                                                                const HostDevices& host);

}  // namespace sy
