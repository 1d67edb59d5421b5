// A group of cuda ranks (DESIGN.md, "Parallel groups"): tp × pcp CudaBackends, each
// loading its own tensor-parallel slice, driven by GroupBackend (one thread per rank).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "worker/backend/cuda_backend.h"
#include "worker/backend/cuda_context_attention.h"
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
  const int tp = options.tp, pcp = options.pcp;
  if (static_cast<int>(devices.size()) != tp * pcp)
    throw std::invalid_argument("a cuda group of tp " + std::to_string(tp) + " × pcp " + std::to_string(pcp) + " needs " +
                                std::to_string(tp * pcp) + " devices, not " + std::to_string(devices.size()));
  if (pcp > CudaContextAttention::kMaxRanks)
    throw std::invalid_argument("cuda context parallelism takes pcp up to " + std::to_string(CudaContextAttention::kMaxRanks));
  RankShape::of(config, {0, tp});  // a shape tp does not divide is refused before any load
  auto is_shared = [](std::vector<int> d) {
    std::sort(d.begin(), d.end());
    return std::adjacent_find(d.begin(), d.end()) != d.end();
  };
  const bool shared = is_shared(devices);
  auto device = [&](int p, int t) { return devices[static_cast<size_t>(p * tp + t)]; };
  // tp_comms[p][t], cp_comms[t][p]: rank (p, t)'s ends; each group picks its own kind
  // (local where its own ranks share a GPU).
  std::vector<parallel::CommunicatorGroup> tp_comms, cp_comms;
  for (int p = 0; p < pcp && tp > 1; ++p) {
    std::vector<int> d;
    for (int t = 0; t < tp; ++t) d.push_back(device(p, t));
    tp_comms.push_back(make_comms(d, is_shared(d), options.tuning));
  }
  for (int t = 0; t < tp && pcp > 1; ++t) {
    std::vector<int> d;
    for (int p = 0; p < pcp; ++p) d.push_back(device(p, t));
    cp_comms.push_back(make_comms(d, is_shared(d), options.tuning));
  }
  BackendOptions rank_options = options;
  // Ranks that share a GPU cannot each take a fraction of its free memory (the first
  // would leave the others nothing): they keep the fixed KV budget.
  if (shared) rank_options.kv_free_memory_fraction = 0;
  if (pcp > 1) rank_options.kv_host_memory_bytes = 0;  // shared below
  std::vector<std::unique_ptr<Backend>> ranks;
  std::vector<CudaBackend*> cuda;  // rank (p, t) at p × tp + t
  for (int p = 0; p < pcp; ++p)
    for (int t = 0; t < tp; ++t) {
      auto rank = std::make_unique<CudaBackend>(
          src, config, rank_options, device(p, t), TensorParallel{t, tp},
          tp > 1 ? tp_comms[static_cast<size_t>(p)][static_cast<size_t>(t)].get() : nullptr, ContextParallel{p, pcp},
          pcp > 1 ? cp_comms[static_cast<size_t>(t)][static_cast<size_t>(p)].get() : nullptr);
      cuda.push_back(rank.get());
      ranks.push_back(std::move(rank));
    }
  // The shared host tiers: mapped and portable, so that every rank's device reads and
  // writes its tier.
  if (pcp > 1 && options.kv_host_memory_bytes > 0)
    share_host_tiers(cuda, tp, pcp, options.kv_host_memory_bytes,
                     [](const CudaBackend& first, size_t bytes) { return allocate_pinned_host_tier(first.device(), bytes); });
  const std::string tp_kind = tp > 1 ? std::string(tp_comms[0][0]->kind()) : "none";
  const std::string cp_kind = pcp > 1 ? std::string(cp_comms[0][0]->kind()) : "none";
  std::fprintf(stderr, "cuda group: tp %d (%s collectives) × pcp %d (%s collectives)%s\n", tp, tp_kind.c_str(), pcp,
               cp_kind.c_str(), shared || pcp > 1 ? " (no decode graphs: ranks share a GPU or pcp > 1)" : "");
  parallel::CommunicatorGroup all;
  for (auto* groups : {&tp_comms, &cp_comms})
    for (auto& g : *groups)
      for (auto& c : g) all.push_back(std::move(c));
  return std::make_unique<GroupBackend>(std::move(ranks), std::move(all));
}

}  // namespace sy
