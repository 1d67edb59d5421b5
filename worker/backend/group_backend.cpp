#include "worker/backend/group_backend.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

#include "worker/backend/cpu_backend.h"

namespace sy {

GroupBackend::GroupBackend(std::vector<std::unique_ptr<Backend>> ranks, parallel::CommunicatorGroup comms)
    : ranks_(std::move(ranks)), comms_(std::move(comms)) {
  if (ranks_.empty()) throw std::invalid_argument("a group needs ranks");
  num_kv_blocks_ = ranks_[0]->num_kv_blocks();
  for (const auto& r : ranks_) num_kv_blocks_ = std::min(num_kv_blocks_, r->num_kv_blocks());
  scratch_logits_.resize(ranks_.size());
  scratch_ids_.resize(ranks_.size());
  for (int r = 1; r < size(); ++r) threads_.emplace_back([this, r] { rank_loop(r); });
}

bool GroupBackend::host_tier_allocated() const {
  return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& r) { return r->host_tier_allocated(); });
}

int32_t GroupBackend::take_host_tier() {
  if (!host_tier_allocated()) return 0;
  int32_t taken = INT32_MAX;
  std::exception_ptr error;
  for (const auto& r : ranks_) {
    try {
      taken = std::min(taken, r->take_host_tier());
    } catch (...) {
      if (!error) error = std::current_exception();  // the group stays without a tier
    }
  }
  if (error) std::rethrow_exception(error);
  return num_host_kv_blocks_ = taken;
}

void GroupBackend::wait_host_tier() const {
  for (const auto& r : ranks_) r->wait_host_tier();
}

GroupBackend::~GroupBackend() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  // The ranks first: a rank's CUDA graphs captured collectives of the communicators.
  ranks_.clear();
}

void GroupBackend::rank_loop(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(rank);
    } catch (...) {
      error = std::current_exception();
      for (auto& c : comms_) c->abort();  // no rank may wait for this one forever
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_all();
  }
}

void GroupBackend::on_every_rank(const std::function<void(int)>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &job;
    pending_ = size() - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  std::exception_ptr error;
  try {
    job(0);
  } catch (...) {
    error = std::current_exception();
    for (auto& c : comms_) c->abort();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (!error) error = error_;
  if (error) std::rethrow_exception(error);
}

void GroupBackend::forward(const BatchPlan& plan, std::vector<float>& logits) {
  on_every_rank([&](int r) { ranks_[static_cast<size_t>(r)]->forward(plan, r == 0 ? logits : scratch_logits_[static_cast<size_t>(r)]); });
}

void GroupBackend::forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows, std::vector<int32_t>& ids) {
  on_every_rank([&](int r) {
    ranks_[static_cast<size_t>(r)]->forward_sample(plan, rows, r == 0 ? ids : scratch_ids_[static_cast<size_t>(r)]);
  });
}

std::unique_ptr<Backend> create_cpu_group(const ModelSource& src, const ModelConfig& config, const BackendOptions& options) {
  const int tp = options.tp, pcp = options.pcp;
  if (pcp < 1 || pcp > 64) throw std::invalid_argument("pcp must be in 1..64");
  RankShape::of(config, {0, tp});  // a shape tp does not divide is refused before any load
  auto make = [](int size) {
    parallel::CommunicatorOptions co;
    co.size = size;
    return parallel::create_communicators("threads", co);
  };
  // tp_comms[p][t], cp_comms[t][p]: rank (p, t)'s ends.
  std::vector<parallel::CommunicatorGroup> tp_comms, cp_comms;
  for (int p = 0; p < pcp && tp > 1; ++p) tp_comms.push_back(make(tp));
  for (int t = 0; t < tp && pcp > 1; ++t) cp_comms.push_back(make(pcp));
  std::vector<std::unique_ptr<Backend>> ranks;
  std::vector<CpuBackend*> cpu;  // rank (p, t) at p × tp + t
  BackendOptions rank_options = options;
  if (pcp > 1) rank_options.kv_host_memory_bytes = 0;  // shared below
  // One after the other: loading uses the process pool, which serves one caller at a time.
  for (int p = 0; p < pcp; ++p)
    for (int t = 0; t < tp; ++t) {
      auto rank = std::make_unique<CpuBackend>(src, config, rank_options, TensorParallel{t, tp},
                                               tp > 1 ? tp_comms[static_cast<size_t>(p)][static_cast<size_t>(t)].get() : nullptr,
                                               ContextParallel{p, pcp},
                                               pcp > 1 ? cp_comms[static_cast<size_t>(t)][static_cast<size_t>(p)].get() : nullptr);
      cpu.push_back(rank.get());
      ranks.push_back(std::move(rank));
    }
  if (pcp > 1 && options.kv_host_memory_bytes > 0)
    share_host_tiers(cpu, tp, pcp, options.kv_host_memory_bytes,
                     [](const CpuBackend&, size_t bytes) { return std::shared_ptr<char[]>(new char[bytes]); });
  parallel::CommunicatorGroup all;
  for (auto* groups : {&tp_comms, &cp_comms})
    for (auto& g : *groups)
      for (auto& c : g) all.push_back(std::move(c));
  return std::make_unique<GroupBackend>(std::move(ranks), std::move(all));
}

}  // namespace sy
