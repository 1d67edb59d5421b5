// A tensor-parallel group of cuda ranks (DESIGN.md, "Parallel groups"): one CudaBackend
// per device, each loading its own slice, driven by GroupBackend (one thread per rank).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "worker/backend/cuda_backend.h"
#include "worker/backend/group_backend.h"
#include "worker/parallel/communicator.h"
#include "worker/parallel/split_communicator.h"

namespace sy {
namespace {

// The group's communicators: ranks that share a GPU use the local kind; distinct GPUs
// send small collectives to the one-shot peer kernels and the rest to NCCL, or use the
// peer kernels alone where NCCL is not built (BackendTuning::collectives overrides).
parallel::CommunicatorGroup make_comms(const std::vector<int>& devices, bool shared, const BackendTuning& tuning) {
  const std::vector<std::string> kinds = parallel::communicator_kinds();
  const bool have_nccl = std::find(kinds.begin(), kinds.end(), "nccl") != kinds.end();
  std::string kind = tuning.collectives;
  if (kind == "auto") kind = shared ? "local" : have_nccl ? "peer+nccl" : "peer";
  parallel::CommunicatorOptions options;
  options.size = static_cast<int>(devices.size());
  options.devices = devices;
  if (kind == "peer" || kind == "nccl" || kind == "local") return parallel::create_communicators(kind, options);
  if (kind != "peer+nccl")
    throw std::invalid_argument("collectives must be auto, local, peer, nccl or peer+nccl (not \"" + kind + "\")");
  return parallel::make_split_group(parallel::create_communicators("peer", options),
                                    parallel::create_communicators("nccl", options),
                                    static_cast<size_t>(tuning.peer_max_bytes) / sizeof(float));
}

}  // namespace

std::unique_ptr<Backend> create_cuda_group(const ModelSource& src, const ModelConfig& config, const BackendOptions& options,
                                           const std::vector<int>& devices) {
  const int tp = static_cast<int>(devices.size());
  RankShape::of(config, {0, tp});  // a shape tp does not divide is refused before any load
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  const bool shared = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  parallel::CommunicatorGroup comms = make_comms(devices, shared, options.tuning);
  BackendOptions rank_options = options;
  // Ranks that share a GPU cannot each take a fraction of its free memory (the first
  // would leave the others nothing): they keep the fixed KV budget.
  if (shared) rank_options.kv_free_memory_fraction = 0;
  std::vector<std::unique_ptr<Backend>> ranks;
  for (int r = 0; r < tp; ++r)
    ranks.push_back(std::make_unique<CudaBackend>(src, config, rank_options, devices[static_cast<size_t>(r)],
                                                  TensorParallel{r, tp}, comms[static_cast<size_t>(r)].get()));
  std::fprintf(stderr, "cuda group: tp %d over %s collectives%s\n", tp, std::string(comms[0]->kind()).c_str(),
               shared ? " (ranks share a GPU: no decode graphs)" : "");
  return std::make_unique<GroupBackend>(std::move(ranks), std::move(comms));
}

}  // namespace sy
