// The cuda backend: executes the same BatchPlan as the CPU backend on one GPU. Weights
// in bf16 (Q8_0 files keep Q8_0), an fp32 residual stream, bf16 activations between
// kernels, GEMMs through cuBLASLt, a bf16 paged KV cache in device memory read by
// kernels/cuda/attention.cuh, logits back as fp32 (forward) or only the chosen ids
// (forward_sample: argmax or kernels/cuda/sampling.cuh on the device).
//
// Decode steps (every sequence one token at the end of its context) of 1..max_num_seqs
// sequences replay a CUDA graph captured on first use per batch size: the step buffers
// sit at fixed addresses sized for the largest step, the plan arrays are copied into
// them before each replay, and the attention kernels read context lengths on the
// device. Other steps (prefill, mixed) run eagerly. Not thread-safe: one thread calls
// forward() (the engine thread), as for every backend.
//
// Tensor parallelism: a backend made for one rank of a group (TensorParallel, with that
// rank's end of a device communicator) uploads only its slice of the weights
// (RankShape), keeps the KV of its own heads, sums the row-parallel projections over the
// group in the decoder's all_reduce_delta (inside the decode graphs too) and gathers the
// vocabulary slices of the logits, so every rank chooses the same tokens. GroupBackend
// drives the ranks, one thread each (create_cuda_group).
//
// Context parallelism: a backend made with ContextParallel (and its end of a device
// communicator of the pcp ranks sharing its tensor-parallel slice) runs only its rows of
// each step (worker/plan/context_split.h), keeps only the KV blocks whose home it is (slot
// b / pcp: it reports pcp × its slots as its block count), attends through
// CudaContextAttention (cuda_context_attention.h) and gathers the final rows, so that
// context-parallel rank 0 computes the logits; the other ranks return none. Every step
// runs eagerly (no decode graphs).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/sampling.cuh"
#include "worker/backend/backend.h"
#include "worker/backend/background_host_tier.h"
#include "worker/backend/cuda_weights.h"
#include "worker/backend/step_profile.h"
#include "worker/model/rank_shape.h"

namespace sy {

namespace parallel {
class Communicator;
}
class CudaContextAttention;

class CudaBackend : public Backend {
 public:
  // Throws std::runtime_error when the device is missing or refuses the memory,
  // ModelFileError for a bad model, std::invalid_argument for a shape tp does not divide.
  // `comm`: this rank's end of a device communicator of tp.size ranks, bound to `device`
  // (null when tp.size is 1). A communicator that cannot be captured (the "local" kind)
  // leaves every step eager: no decode graphs. `cp_comm`: this rank's end of a device
  // communicator of cp.size ranks, bound to `device` (null when cp.size is 1).
  CudaBackend(const ModelSource& src, const ModelConfig& config, const BackendOptions& options, int device,
              TensorParallel tp = {}, parallel::Communicator* comm = nullptr, ContextParallel cp = {},
              parallel::Communicator* cp_comm = nullptr);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  const ModelConfig& config() const override { return config_; }
  int32_t block_size() const override { return block_size_; }
  // Logical blocks: a context-parallel rank holds every pcp-th in its num_blocks_ slots.
  int32_t num_kv_blocks() const override { return num_blocks_ * cp_size_; }
  int32_t num_host_kv_blocks() const override { return num_host_blocks_; }
  int32_t take_host_tier() override;
  bool host_tier_allocated() const override { return background_host_.ready(); }
  void wait_host_tier() const override { background_host_.wait(); }
  // The host tier of a context-parallel rank (create_cuda_group): `count` slots of
  // host_slot_bytes() of mapped pinned memory (portable: every device reads it) from
  // `allocation`, shared by the ranks of its tensor-parallel index, since a block saved by
  // its home rank may come back into a block another rank is home to; taken by
  // take_host_tier() once allocated.
  size_t host_slot_bytes() const;
  void share_host_tier(std::shared_future<std::shared_ptr<char>> allocation, int32_t count);
  int device() const { return device_; }
  void forward(const BatchPlan& plan, std::vector<float>& logits) override;
  bool samples_on_device() const override { return true; }
  void forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows,
                      std::vector<int32_t>& ids) override;
  // Where one step's time goes (worker/backend/step_profile.h; cuda_profile.cpp).
  StepProfile profile_step(const BatchPlan& plan, int repeats);

  // Decode batch sizes replayed from a captured graph so far.
  size_t graphs_captured() const { return graphs_.size(); }

 private:
  // What the host knows about a step before launching it.
  struct Step {
    int32_t tokens = 0;
    int32_t seqs = 0;
    bool decode = false;  // every sequence runs one token at the end of its context
    int32_t max_q_len = 0;
    int32_t max_context = 0;
  };
  // Offsets (in int32 elements) of the plan arrays inside plan_ and plan_host_.
  struct PlanLayout {
    size_t tokens, positions, cu_seqlens, kv_indptr, kv_last_block_len, logits_rows, kv_indices,
        total;
  };

  static Step analyze(const BatchPlan& plan, int32_t block_size);
  // Validates the plan and queues its kv_copies on stream_ (kernels/cuda/kv_copy.cuh), a
  // kernel per run of one direction, in order; a context-parallel rank queues the copies
  // of the blocks it is home to, every save, then (when the plan also loads) waits for
  // every rank's saves at a barrier, then every load (copy_kv_blocks_of_rank's order).
  void begin_step(const BatchPlan& plan);
  void allocate_host_tier(size_t bytes, size_t per_block);
  PlanLayout plan_layout() const;
  void ensure_capacity(int32_t tokens, size_t indices);
  void upload_plan(const BatchPlan& plan);
  void prepare_step(const BatchPlan& plan, const Step& step);
  // A context-parallel step: lays out the attention's tables, uploads this rank's rows
  // (tokens, positions; the logits rows as gathered rows) and returns their Step.
  Step prepare_context_step(const BatchPlan& plan);
  // Runs the step: logits to `logits` (forward) or, with `rows`, ids to `ids`.
  void run_step(const BatchPlan& plan, const Step& step, std::vector<float>* logits,
                std::span<const RowSampling> rows, std::vector<int32_t>* ids);
  void ensure_choice_capacity(int64_t rows, int64_t sampled_rows);
  // Uploads `n` rows of sampling parameters: plan row i's go to row to[i] (to null: i);
  // rows no plan row names take argmax.
  void upload_row_params(std::span<const RowSampling> rows, const int32_t* to, int64_t n);
  // Chooses the tokens of logits_ rows [0, n) into ids_ + first: the sampler with the
  // parameters from row_params_ + first, or argmax.
  void enqueue_choose(int64_t first, int64_t n, bool sampled);
  class LayerOps;  // the decoder's ops as kernel launches (cuda_step.cpp)
  // `after_op`, when given, is called with each decoder op's name once it is issued
  // (profile_step records an event there).
  void enqueue_layers(const Step& step, const std::function<void(const char*)>* after_op = nullptr);
  void enqueue_lm_head(const __nv_bfloat16* rows, int64_t n);
  void run_graph(const Step& step);
  // The first n rows of the last LM head's logits, [n, vocab] fp32: logits_, or with
  // tensor parallelism every rank's slice gathered (a collective: every rank calls it).
  const float* gathered_logits(int64_t n);
  void drop_graphs();
  void check(cudaError_t e, const char* what);

  ModelConfig config_;
  RankShape shape_;    // this rank's slice (the whole model for one rank)
  ModelConfig local_;  // this rank's head counts and FFN width
  parallel::Communicator* comm_;
  bool graphs_allowed_;  // the communicator (if any) can be captured, no context parallelism
  int32_t cp_size_ = 1;
  int32_t cp_rank_ = 0;
  parallel::Communicator* cp_comm_ = nullptr;  // pcp > 1: the host tier's barrier
  std::unique_ptr<CudaContextAttention> cp_;  // context parallelism (pcp > 1)
  int device_;
  int num_sms_ = 0;
  int32_t block_size_;
  int32_t num_blocks_ = 0;
  int32_t max_num_seqs_;
  int prefill_warps_;
  int prefill_attention_kernel_;
  bool programmatic_launch_;
  bool deterministic_;
  cudaStream_t stream_ = nullptr;
  CudaModelWeights weights_;
  cuda::Linear linear_;
  cuda::DeviceBuffer kv_;  // per layer: K [num_blocks, n_kv_heads, block_size, head_dim], then V
  size_t layer_kv_elements_ = 0;
  // The KV host tier (BackendOptions::kv_host_memory_bytes): num_host_blocks_ slots of
  // mapped pinned memory (its own, or its group's), and the (block, slot) pairs of a
  // step's copies, also mapped; own_copies_: this rank's copies of a step.
  std::shared_ptr<char> host_pool_;
  int32_t num_host_blocks_ = 0;
  BackgroundHostTier<std::shared_ptr<char>> background_host_;  // until taken
  int2* copy_pairs_ = nullptr;
  size_t copy_pairs_capacity_ = 0;
  std::vector<KvCopy> own_copies_;

  // Step buffers, sized for token_capacity_ tokens (kv_indices for index_capacity_).
  int32_t token_capacity_ = 0;
  size_t index_capacity_ = 0;
  int32_t logits_capacity_ = 0;  // rows of logits_ (≥ max_num_seqs: a decode graph's rows)
  // logits_ holds this rank's [rows, vocab_stride] slice under tensor parallelism;
  // gather_staging_ [tp, rows, vocab_stride] every rank's, gathered_ [rows, vocab] them
  // in vocabulary order.
  cuda::DeviceBuffer x_, delta_, h_, qkv_, attn_, gate_up_, act_, rows_h_, logits_, attn_workspace_,
      plan_, gather_staging_, gathered_;
  // Tensor-parallel greedy rows: each rank's best (value, index) key per row, then every
  // rank's ([tp, rows]), merged without gathering the logits.
  cuda::DeviceBuffer shard_keys_, gathered_keys_;
  // The multi-block argmax's workspace (ids_capacity_ rows): zeroed when allocated, every
  // kernel leaves it zero.
  cuda::DeviceBuffer argmax_workspace_;
  int32_t* plan_host_ = nullptr;  // pinned mirror of plan_

  std::map<int32_t, cudaGraphExec_t> graphs_;  // decode batch size → replayable step
  bool capturing_ = false;

  // forward_sample(): chosen ids (device and pinned host), per-row parameters, and the
  // sampler's workspace, grown to the most rows seen.
  cuda::DeviceBuffer ids_, row_params_, sample_workspace_;
  int32_t* ids_host_ = nullptr;
  int64_t ids_capacity_ = 0;
  int64_t workspace_rows_ = 0;
  std::vector<cuda::SamplingRowParams> row_params_host_;
};

// A group of devices.size() = options.tp × options.pcp cuda ranks, rank p · tp + t
// (tensor-parallel rank t of context-parallel rank p) on devices[p · tp + t], each with
// its slice of the weights, driven by GroupBackend; the ranks of one p share a
// tensor-parallel communicator, those of one t a context-parallel one. Distinct GPUs: the "peer" one-shot
// kernels for small collectives and NCCL for large ones, captured in the decode graphs.
// Ranks that share a GPU (repeated devices: tests of tensor parallelism on a one-GPU
// machine): the "local" communicator, every step eager. Throws std::invalid_argument for
// a shape the size does not divide, parallel::CommunicatorError when the devices cannot
// form a group.
std::unique_ptr<Backend> create_cuda_group(const ModelSource& src, const ModelConfig& config, const BackendOptions& options,
                                           const std::vector<int>& devices);

// `bytes` of KV host tier: pinned host memory, mapped (the copy kernel reads and writes it
// over the bus) and portable (every device's, whichever thread or rank allocated it), freed
// with the last owner; allocated in `device`'s context, which the calling thread (one of
// its own) is set to. Logs how long it took; throws std::runtime_error.
std::shared_ptr<char> allocate_pinned_host_tier(int device, size_t bytes);

}  // namespace sy
