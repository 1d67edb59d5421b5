// The CPU backend: float32 activations; linear layers on the weights in their stored
// type (every type the readers take: kernels/cpu/linear.h, SIMD level chosen at run
// time; the weights are views of the file, which the backend maps again itself so that
// `src` may go first), or widened to float32 (BackendOptions::cpu_float32_weights, the
// reference path) through the batch-invariant GEMM (BackendOptions::deterministic, on by
// default) or OpenBLAS; attention over the paged KV cache on a thread pool. It runs the
// decoder's one description (worker/model/decoder.h)
// and is the reference every other backend is compared with.
//
// Tensor parallelism: a backend made for one rank of a group (TensorParallel, with that
// rank's end of a "threads" communicator) loads only its slice of the weights
// (RankShape), keeps the KV of its own heads, sums the row-parallel projections over the
// group and gathers the vocabulary slices of the logits, so every rank returns the whole
// logits. Each rank then runs on its own thread with its own pool (the host's threads
// divided among the ranks); GroupBackend (group_backend.h) drives the ranks.
//
// Context parallelism: a rank made with ContextParallel (and its end of a context-
// parallel communicator) runs only its rows of each step (worker/plan/context_split.h),
// keeps only the KV blocks whose home it is, in slot b / pcp of its cache (so it reports
// pcp × its slots as its logical block count), and attends through ContextAttention
// (cpu_context_attention.h); the final rows are gathered so every rank returns the whole
// logits.
#pragma once

#include <memory>

#include "worker/backend/backend.h"
#include "worker/backend/background_host_tier.h"
#include "worker/model/rank_shape.h"
#include "worker/model/weights.h"

namespace sy {

struct StepProfile;

namespace cpu {
class ThreadPool;
}
namespace parallel {
class Communicator;
}

class CpuBackend : public Backend {
 public:
  // `comm`: this rank's end of a host-memory communicator of tp.size ranks (null when
  // tp.size is 1). Throws std::invalid_argument for a shape tp does not divide.
  // `cp_comm`: this rank's end of a host communicator of cp.size ranks (null when cp.size
  // is 1).
  CpuBackend(const ModelSource& src, const ModelConfig& config, const BackendOptions& options,
             TensorParallel tp = {}, parallel::Communicator* comm = nullptr, ContextParallel cp = {},
             parallel::Communicator* cp_comm = nullptr);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  const ModelConfig& config() const override { return weights_.config; }
  int32_t block_size() const override { return block_size_; }
  int32_t num_kv_blocks() const override { return num_blocks_ * cp_size_; }
  int32_t num_host_kv_blocks() const override { return num_host_blocks_; }
  int32_t take_host_tier() override;
  bool host_tier_allocated() const override { return background_host_.ready(); }
  void wait_host_tier() const override { background_host_.wait(); }
  // The host tier of a context-parallel rank (create_cpu_group): `count` slots of
  // host_slot_bytes() from `allocation`, shared by the ranks of its tensor-parallel index,
  // since a block saved by its home rank may come back into a block another rank is home
  // to; taken by take_host_tier() once allocated.
  size_t host_slot_bytes() const { return kv_layout().slot_bytes(); }
  void share_host_tier(std::shared_future<std::shared_ptr<char[]>> allocation, int32_t count);
  void forward(const BatchPlan& plan, std::vector<float>& logits) override;
  // Where a step's time goes (worker/backend/step_profile.h): each decoder op's wall time
  // summed over the layers, then the LM head, medians over `repeats` runs of `plan`
  // (its KV writes included), and forward() whole. One rank only: a tensor- or
  // context-parallel rank gives an empty profile.
  StepProfile profile_step(const BatchPlan& plan, int repeats);

 private:
  class Step;  // the decoder's ops over one plan (cpu_backend.cpp)

  // y[m, w.rows] = x[m, w.cols] · wᵀ (y's row stride ldy, -1: w.rows): float32 weights
  // through the batch-invariant GEMM or OpenBLAS as the options chose, weights kept in
  // their type through cpu::linear (batch-invariant unless deterministic is off).
  void matmul(const float* x, const WeightMatrix& w, float* y, int64_t m, int64_t ldy = -1) const;
  // Sums `data` over the ranks (no-op for one rank); a failed collective is fatal to the
  // step (std::runtime_error: the engine ends its requests).
  void all_reduce(float* data, size_t n) const;

  // The model file mapped again for the weights' views (null on the float32 path): the
  // caller's ModelSource may be destroyed before the backend.
  std::unique_ptr<ModelSource> own_src_;
  ModelWeights weights_;
  ModelConfig local_;  // this rank's head counts and FFN width
  cpu::RopeParams rope_;
  int32_t block_size_;
  int32_t num_blocks_;  // this rank's cache slots
  bool deterministic_;
  bool amx_;  // BackendTuning::cpu_amx
  bool prefetch_;  // BackendTuning::cpu_prefetch
  parallel::Communicator* comm_;
  parallel::Communicator* cp_comm_;
  int32_t cp_size_ = 1;
  std::unique_ptr<cpu::ThreadPool> own_pool_;  // a tensor-parallel rank's threads
  cpu::ThreadPool* pool_;
  // Per layer: [num_blocks, local n_kv_heads, block_size, head_dim] keys, then values,
  // float32 in kv_ or IEEE half in kv16_ (BackendOptions::cpu_kv_f16).
  std::unique_ptr<float[]> kv_;
  std::unique_ptr<uint16_t[]> kv16_;
  size_t layer_kv_floats_ = 0;  // values per layer's keys (and per its values)
  KvBlockLayout kv_layout() const;
  // The KV host tier (BackendOptions::kv_host_memory_bytes): num_host_blocks_ slots.
  std::shared_ptr<char[]> host_kv_;
  int32_t num_host_blocks_ = 0;
  BackgroundHostTier<std::shared_ptr<char[]>> background_host_;  // until taken
  // Activations, grown to the largest step seen.
  std::vector<float> x_, h_, qkv_, attn_, proj_, gate_up_, act_, last_, local_logits_, gathered_, rows_, send_, recv_;
};

}  // namespace sy
