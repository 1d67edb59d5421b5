// The executor of a parallel group (DESIGN.md, "Parallel groups"): one backend per rank,
// each driven by its own thread (a CUDA rank's thread owns its device and stream), the
// same plan given to every rank, rank 0's logits (or ids) returned. Its KV capacity is
// the smallest rank's. To the engine it is one Backend, like a single device.
//
// A rank that throws (a device error, a collective that timed out) breaks the group: the
// communicators are aborted so that no other rank waits forever, and forward() rethrows
// the first error (the engine then ends every request and the worker restarts).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/backend/backend.h"
#include "worker/parallel/communicator.h"

namespace sy {

class GroupBackend : public Backend {
 public:
  // `comms`: every communicator the ranks use (one per rank for tensor parallelism alone;
  // a tp × pcp group's tensor- and context-parallel ones), owned by the group, which
  // aborts them all when a rank fails. `ranks` non-empty.
  GroupBackend(std::vector<std::unique_ptr<Backend>> ranks, parallel::CommunicatorGroup comms);
  ~GroupBackend() override;

  std::string name() const override { return ranks_[0]->name(); }
  const ModelConfig& config() const override { return ranks_[0]->config(); }
  int32_t block_size() const override { return ranks_[0]->block_size(); }
  int32_t num_kv_blocks() const override { return num_kv_blocks_; }
  int32_t num_host_kv_blocks() const override { return num_host_kv_blocks_; }
  // The ranks' tiers (each tensor-parallel rank its own, the context-parallel ranks of
  // one tensor-parallel index one shared): taken all at one step, once every rank's is
  // allocated; the group has the smallest rank's slots.
  int32_t take_host_tier() override;
  bool host_tier_allocated() const override;
  void wait_host_tier() const override;
  int size() const { return static_cast<int>(ranks_.size()); }
  void forward(const BatchPlan& plan, std::vector<float>& logits) override;
  bool samples_on_device() const override { return ranks_[0]->samples_on_device(); }
  void forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows, std::vector<int32_t>& ids) override;

 private:
  // Runs job(rank) on every rank's thread (rank 0 on the caller's) and waits for all.
  void on_every_rank(const std::function<void(int)>& job);
  void rank_loop(int rank);

  std::vector<std::unique_ptr<Backend>> ranks_;
  parallel::CommunicatorGroup comms_;
  int32_t num_kv_blocks_ = 0;
  int32_t num_host_kv_blocks_ = 0;  // every rank's copies run the plan's kv_copies on its shard
  std::vector<std::vector<float>> scratch_logits_;  // ranks 1.. compute logits too
  std::vector<std::vector<int32_t>> scratch_ids_;

  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;  // ranks 1..
};

// A group of `options.tp` × `options.pcp` CPU ranks over "threads" communicators
// (create_backend("cpu") with tp or pcp > 1 builds it): rank p · tp + t is tensor-parallel
// rank t of context-parallel rank p; the ranks of one p share a tensor-parallel
// communicator, those of one t a context-parallel one. Rank 0's logits are returned
// (every rank computes the whole logits). Throws std::invalid_argument for a shape tp does
// not divide.
std::unique_ptr<Backend> create_cpu_group(const ModelSource& src, const ModelConfig& config, const BackendOptions& options);

// The KV host tier of a context-parallel group (BackendOptions::kv_host_memory_bytes per
// rank): one per tensor-parallel index holding its pcp ranks' budgets, since a block's
// home rank saves it and another rank may load it back. `ranks`: rank (p, t) at
// p × tp + t, each with host_slot_bytes() and share_host_tier(allocation, count);
// `allocate(rank (0, t), bytes)` gives a pool, called on a thread of its own (as a single
// rank's tier is, BackgroundHostTier); the group takes the tiers once allocated
// (GroupBackend::take_host_tier). Throws std::invalid_argument when no block fits.
template <typename Rank, typename Allocate>
void share_host_tiers(const std::vector<Rank*>& ranks, int tp, int pcp, size_t budget, Allocate allocate) {
  for (int t = 0; t < tp; ++t) {
    Rank* first = ranks[static_cast<size_t>(t)];
    const size_t slot = first->host_slot_bytes();
    const size_t count = std::min<size_t>(budget / slot * static_cast<size_t>(pcp), INT32_MAX);
    if (count == 0) throw std::invalid_argument("the KV host memory budget holds no block");
    auto allocation = std::async(std::launch::async, [first, allocate, bytes = count * slot] { return allocate(*first, bytes); }).share();
    for (int p = 0; p < pcp; ++p) ranks[static_cast<size_t>(p * tp + t)]->share_host_tier(allocation, static_cast<int32_t>(count));
  }
}

}  // namespace sy
