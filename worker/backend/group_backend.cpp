#include "worker/backend/group_backend.h"

#include <algorithm>
#include <stdexcept>

#include "worker/backend/cpu_backend.h"

namespace sy {

GroupBackend::GroupBackend(std::vector<std::unique_ptr<Backend>> ranks, parallel::CommunicatorGroup comms)
    : ranks_(std::move(ranks)), comms_(std::move(comms)) {
  if (ranks_.empty() || ranks_.size() != comms_.size()) throw std::invalid_argument("a group needs one communicator per rank");
  num_kv_blocks_ = ranks_[0]->num_kv_blocks();
  for (const auto& r : ranks_) num_kv_blocks_ = std::min(num_kv_blocks_, r->num_kv_blocks());
  scratch_logits_.resize(ranks_.size());
  scratch_ids_.resize(ranks_.size());
  for (int r = 1; r < size(); ++r) threads_.emplace_back([this, r] { rank_loop(r); });
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
  const int tp = options.tp;
  RankShape::of(config, {0, tp});  // a shape tp does not divide is refused before any load
  parallel::CommunicatorOptions co;
  co.size = tp;
  parallel::CommunicatorGroup comms = parallel::create_communicators("threads", co);
  std::vector<std::unique_ptr<Backend>> ranks;
  // One after the other: loading uses the process pool, which serves one caller at a time.
  for (int r = 0; r < tp; ++r) ranks.push_back(std::make_unique<CpuBackend>(src, config, options, TensorParallel{r, tp}, comms[static_cast<size_t>(r)].get()));
  return std::make_unique<GroupBackend>(std::move(ranks), std::move(comms));
}

}  // namespace sy
