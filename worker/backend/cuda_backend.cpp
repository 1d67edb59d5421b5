#include "worker/backend/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/check.h"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/kv_copy.cuh"
#include "kernels/cuda/launch.cuh"
#include "worker/backend/cuda_context_attention.h"
#include "worker/parallel/communicator.h"

namespace sy {
namespace {

// The step buffers hold at least this many tokens from the start.
constexpr int32_t kMinTokenCapacity = 256;
// Rows of logits computed per LM-head GEMM in an eager step (a decode graph computes
// all of its rows at once; the buffer holds at least max_num_seqs rows).
constexpr int32_t kMinLogitsRows = 64;

void throw_cuda(cudaError_t e, const std::string& what) {
  throw std::runtime_error("cuda backend: " + what + ": " + cudaGetErrorString(e));
}

}  // namespace

CudaBackend::CudaBackend(const ModelSource& src, const ModelConfig& config,
                         const BackendOptions& options, int device, TensorParallel tp,
                         parallel::Communicator* comm, ContextParallel cp, parallel::Communicator* cp_comm)
    : config_(config),
      shape_(RankShape::of(config, tp)),
      local_(shape_.local(config)),
      comm_(tp.size > 1 ? comm : nullptr),
      graphs_allowed_((comm_ == nullptr || comm_->capturable()) && cp.size == 1),
      cp_size_(cp.size),
      cp_rank_(cp.rank),
      cp_comm_(cp.size > 1 ? cp_comm : nullptr),
      device_(device),
      block_size_(options.block_size),
      max_num_seqs_(std::max(options.max_num_seqs, 1)),
      prefill_warps_(options.tuning.prefill_warps),
      prefill_attention_kernel_(options.tuning.prefill_attention_kernel),
      programmatic_launch_(options.tuning.programmatic_launch),
      deterministic_(options.deterministic.value_or(false)) {
  if ((prefill_warps_ != 0 && prefill_warps_ != 4 && prefill_warps_ != 8) ||
      prefill_attention_kernel_ < 0 || prefill_attention_kernel_ > 1 ||
      options.tuning.deterministic_gemm_rows <= 0)
    throw std::invalid_argument(
        "tuning: prefill_warps must be 0, 4 or 8, prefill_attention_kernel 0 or 1, deterministic_gemm_rows > 0");
  if (block_size_ <= 0 || block_size_ > 1024)
    throw std::invalid_argument("block size must be in 1..1024");
  if (tp.size > 1 && (!comm || comm->size() != tp.size || comm->rank() != tp.rank ||
                      comm->memory() != parallel::MemoryKind::kDevice || comm->device() != device))
    throw std::invalid_argument(
        "a cuda tensor-parallel rank needs its own end of a device communicator of tp ranks, "
        "bound to its device");
  if (cp.size < 1 || cp.rank < 0 || cp.rank >= cp.size)
    throw std::invalid_argument("context-parallel rank " + std::to_string(cp.rank) + " of " + std::to_string(cp.size));
  if (cp.size > 1 && (!cp_comm || cp_comm->size() != cp.size || cp_comm->rank() != cp.rank ||
                      cp_comm->memory() != parallel::MemoryKind::kDevice || cp_comm->device() != device))
    throw std::invalid_argument(
        "a cuda context-parallel rank needs its own end of a device communicator of pcp ranks, bound to its device");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    throw std::runtime_error("cuda backend: no CUDA device found");
  if (device < 0 || device >= devices)
    throw std::runtime_error("cuda backend: device " + std::to_string(device) +
                             " does not exist (" + std::to_string(devices) + " found)");
  check(cudaSetDevice(device), "selecting the device");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "reading device properties");
  num_sms_ = prop.multiProcessorCount;
  if (prefill_attention_kernel_ == 1 && !cuda::prefill_wgmma_available()) prefill_attention_kernel_ = 0;
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
  if (cp.size > 1)
    cp_ = std::make_unique<CudaContextAttention>(*cp_comm, local_, block_size_, prefill_attention_kernel_, prefill_warps_,
                                                 stream_);

  weights_ = CudaModelWeights::upload(src, config, shape_);
  check(linear_.init(weights_.max_expand_elements), "creating the cuBLASLt handle and the dequantization scratch");
  linear_.set_gemv_max_rows(std::clamp(options.tuning.gemv_max_rows, 0, cuda::kGemvBf16MaxRows));
  linear_.set_quant_gemm_max_rows(std::clamp(options.tuning.quant_gemm_max_rows, 0, cuda::kQuantGemmMaxRows));
  if (deterministic_) linear_.set_batch_invariant(options.tuning.deterministic_gemm_rows);
  logits_capacity_ = std::max(max_num_seqs_, kMinLogitsRows);
  check(rows_h_.allocate(static_cast<size_t>(logits_capacity_) * config.hidden * 2),
        "allocating logits rows");
  const int64_t rank_vocab = comm_ ? shape_.vocab_stride : config.vocab;
  check(logits_.allocate(static_cast<size_t>(logits_capacity_) * rank_vocab * sizeof(float)),
        "allocating logits");
  if (comm_) {
    check(gather_staging_.allocate(static_cast<size_t>(logits_capacity_) * rank_vocab * shape_.size *
                                   sizeof(float)),
          "allocating logits");
    check(gathered_.allocate(static_cast<size_t>(logits_capacity_) * config.vocab * sizeof(float)),
          "allocating logits");
    check(shard_keys_.allocate(static_cast<size_t>(logits_capacity_) * sizeof(uint64_t)), "allocating argmax keys");
    check(gathered_keys_.allocate(static_cast<size_t>(logits_capacity_) * shape_.size * sizeof(uint64_t)),
          "allocating argmax keys");
  }
  ensure_capacity(std::max({options.max_step_tokens, max_num_seqs_, kMinTokenCapacity}), 0);

  // KV cache: bf16 K and V of every layer (this rank's KV heads), from what is left.
  const size_t per_block = host_slot_bytes();  // every layer's K and V of one block
  size_t budget = options.kv_memory_bytes;
  if (options.num_kv_blocks > 0) {
    budget = static_cast<size_t>(options.num_kv_blocks) * per_block;
  } else if (options.kv_free_memory_fraction > 0) {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "reading free memory");
    budget = static_cast<size_t>(static_cast<double>(free) *
                                 std::min(options.kv_free_memory_fraction, 1.0));
  }
  num_blocks_ = static_cast<int32_t>(std::min<size_t>(budget / per_block, INT32_MAX / cp_size_));
  if (num_blocks_ <= 0) throw std::invalid_argument("KV memory budget holds no block");
  layer_kv_elements_ = static_cast<size_t>(num_blocks_) * block_size_ * local_.kv_dim();
  check(kv_.allocate(static_cast<size_t>(num_blocks_) * per_block), "allocating the KV cache");
  // Zeroed once: a kernel that loads a whole tile past a sequence's end multiplies the
  // stale values by zero weights, and 0 · NaN would not be zero.
  check(cudaMemset(kv_.get(), 0, kv_.bytes()), "clearing the KV cache");
  if (options.kv_host_memory_bytes > 0) allocate_host_tier(options.kv_host_memory_bytes, per_block);
  // Room for the block lists of a full cache, now that its size is known.
  ensure_capacity(token_capacity_, static_cast<size_t>(num_blocks_) + token_capacity_);
  // The uploads and the clear ran outside stream_, which does not wait for them.
  check(cudaDeviceSynchronize(), "uploading the model");
  std::fprintf(stderr,
               "cuda backend: device %d (%s, %d SMs), %s: weights %.2f GiB, KV cache %d blocks (%.2f "
               "GiB), %s%d sequences, bf16 GEMV up to %d rows, prefill "
               "attention on %s, %s numerics\n",
               device, prop.name, num_sms_, shape_.describe().c_str(), static_cast<double>(weights_.device_bytes) / (1 << 30),
               num_blocks_, static_cast<double>(kv_.bytes()) / (1 << 30),
               cp_ ? "context-parallel (every step eager), batches up to " : "decode graphs for 1..", max_num_seqs_,
               deterministic_ ? 0 : linear_.gemv_max_rows(),
               prefill_attention_kernel_ == 1 ? "wgmma" : "mma.sync",
               deterministic_ ? "batch-invariant" : "fast");
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(device_);
  drop_graphs();
  if (ids_host_) cudaFreeHost(ids_host_);
  if (copy_pairs_) cudaFreeHost(copy_pairs_);
  if (plan_host_) cudaFreeHost(plan_host_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  if (capturing_) {  // leave the stream usable before reporting
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);
    if (g) cudaGraphDestroy(g);
    capturing_ = false;
  }
  std::string msg = what;
  if (linear_.gemm().last_status() != CUBLAS_STATUS_SUCCESS)
    msg +=
        std::string(" (cuBLASLt: ") + cublasLtGetStatusString(linear_.gemm().last_status()) + ")";
  throw_cuda(e, msg);
}

void CudaBackend::drop_graphs() {
  for (auto& [n, exec] : graphs_) cudaGraphExecDestroy(exec);
  graphs_.clear();
}

CudaBackend::PlanLayout CudaBackend::plan_layout() const {
  const auto C = static_cast<size_t>(token_capacity_);
  PlanLayout p{};
  p.tokens = 0;
  p.positions = C;
  p.cu_seqlens = 2 * C;
  p.kv_indptr = 3 * C + 1;
  p.kv_last_block_len = 4 * C + 2;
  p.logits_rows = 5 * C + 2;
  p.kv_indices = 6 * C + 2;
  p.total = p.kv_indices + index_capacity_;
  return p;
}

// Grows the step buffers; the graphs captured on the old ones are dropped.
void CudaBackend::ensure_capacity(int32_t tokens, size_t indices) {
  if (tokens <= token_capacity_ && indices <= index_capacity_ && plan_host_) return;
  check(cudaStreamSynchronize(stream_), "finishing the last step");
  drop_graphs();
  token_capacity_ = std::max(token_capacity_, tokens);
  index_capacity_ = std::max({index_capacity_ * 2, indices,
                              static_cast<size_t>(num_blocks_) + token_capacity_, size_t{1024}});
  const auto C = static_cast<size_t>(token_capacity_);
  const ModelConfig& c = local_;  // this rank's heads and FFN width
  const size_t qkv = static_cast<size_t>(c.q_dim() + 2 * c.kv_dim());
  check(x_.allocate(C * c.hidden * sizeof(float)), "allocating the residual stream");
  check(delta_.allocate(C * c.hidden * sizeof(float)), "allocating activations");
  check(h_.allocate(C * c.hidden * 2), "allocating activations");
  check(qkv_.allocate(C * qkv * 2), "allocating activations");
  check(attn_.allocate(C * c.q_dim() * 2), "allocating activations");
  check(gate_up_.allocate(C * 2 * c.ffn * 2), "allocating activations");
  check(act_.allocate(C * c.ffn * 2), "allocating activations");
  // Split partials of the decode attention: a decode step of b sequences in s(b) splits
  // needs b · s(b) rows, and s(b) falls as b grows (prefill needs none), so the largest
  // such product, not token_capacity_ · s(1), sizes it (64 rows instead of 64K · 33 =
  // 35 GB for Llama-3-8B with 64K-token steps).
  size_t workspace = 0;
  for (int32_t b = 1; b <= token_capacity_; ++b)
    workspace = std::max(workspace, cuda::attention_workspace_bytes(
                                        b, c.n_heads, c.head_dim,
                                        cuda::decode_num_splits(b, c.n_kv_heads, num_sms_)));
  check(attn_workspace_.allocate(workspace), "allocating the attention workspace");
  const PlanLayout p = plan_layout();
  check(plan_.allocate(p.total * sizeof(int32_t)), "allocating the plan arrays");
  if (plan_host_) cudaFreeHost(plan_host_);
  plan_host_ = nullptr;
  check(cudaMallocHost(&plan_host_, p.total * sizeof(int32_t)), "allocating pinned plan arrays");
}

void CudaBackend::upload_plan(const BatchPlan& plan) {
  const PlanLayout p = plan_layout();
  auto put = [&](size_t offset, const std::vector<int32_t>& v) {
    if (!v.empty()) std::memcpy(plan_host_ + offset, v.data(), v.size() * sizeof(int32_t));
  };
  put(p.tokens, plan.token_ids);
  put(p.positions, plan.positions);
  put(p.cu_seqlens, plan.cu_seqlens);
  put(p.kv_indptr, plan.kv_indptr);
  put(p.kv_last_block_len, plan.kv_last_block_len);
  put(p.logits_rows, plan.logits_rows);
  put(p.kv_indices, plan.kv_indices);
  const size_t used = p.kv_indices + plan.kv_indices.size();
  check(cudaMemcpyAsync(plan_.get(), plan_host_, used * sizeof(int32_t), cudaMemcpyHostToDevice,
                        stream_),
        "uploading the plan");
}

CudaBackend::Step CudaBackend::analyze(const BatchPlan& plan, int32_t block_size) {
  Step s;
  s.tokens = plan.num_tokens();
  s.seqs = plan.num_seqs();
  s.decode = s.seqs == s.tokens && s.seqs > 0;
  const PagedKvTable table = plan.kv_table(block_size);
  for (int32_t i = 0; i < s.seqs; ++i) {
    const int32_t q_len = plan.cu_seqlens[i + 1] - plan.cu_seqlens[i];
    const auto ctx = static_cast<int32_t>(table.context_len(i));
    s.max_q_len = std::max(s.max_q_len, q_len);
    s.max_context = std::max(s.max_context, ctx);
    if (q_len != 1 || plan.positions[plan.cu_seqlens[i]] != ctx - 1) s.decode = false;
  }
  return s;
}

size_t CudaBackend::host_slot_bytes() const {
  return static_cast<size_t>(config_.n_layers) * block_size_ * local_.kv_dim() * 2 * sizeof(__nv_bfloat16);
}

void CudaBackend::share_host_tier(std::shared_future<std::shared_ptr<char>> allocation, int32_t count) {
  background_host_.start(count, std::move(allocation));
}

std::shared_ptr<char> allocate_pinned_host_tier(int device, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  if (const cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    throw std::runtime_error(std::string("selecting the device for the KV host tier: ") + cudaGetErrorString(e));
  // Relaxed for this call: a capture in global mode on another thread (a library's)
  // cannot fail it; the step's own graphs are captured thread-local.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t e = cudaThreadExchangeStreamCaptureMode(&mode);
  char* slots = nullptr;
  if (e == cudaSuccess) {
    e = cudaHostAlloc(reinterpret_cast<void**>(&slots), bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    cudaThreadExchangeStreamCaptureMode(&mode);
  }
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("allocating the KV host tier (pinned host memory): ") + cudaGetErrorString(e));
  std::fprintf(stderr, "cuda: KV host tier of %.2f GiB of pinned host memory allocated in %.1f s\n",
               static_cast<double>(bytes) / (1 << 30),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return std::shared_ptr<char>(slots, [](char* p) { cudaFreeHost(p); });
}

void CudaBackend::allocate_host_tier(size_t bytes, size_t per_block) {
  if (cp_size_ > 1)
    throw std::invalid_argument("a context-parallel rank's KV host tier is its group's (create_cuda_group), not its own");
  const int32_t blocks = static_cast<int32_t>(std::min<size_t>(bytes / per_block, INT32_MAX));
  if (blocks <= 0) throw std::invalid_argument("the KV host memory budget holds no block");
  // Allocated on a thread of its own, on this rank's device (not the default device's
  // context); the backend starts without it.
  background_host_.start(blocks, [device = device_, bytes = static_cast<size_t>(blocks) * per_block] {
    return allocate_pinned_host_tier(device, bytes);
  });
}

int32_t CudaBackend::take_host_tier() { return background_host_.take(host_pool_, num_host_blocks_); }

void CudaBackend::begin_step(const BatchPlan& plan) {
  const std::string bad = plan.validate(block_size_, num_kv_blocks(), config_.vocab, num_host_blocks_);
  SY_CHECK_MSG(bad.empty(), "invalid batch plan: %s", bad.c_str());
  if (plan.kv_copies.empty()) return;
  check(cudaSetDevice(device_), "selecting the device");
  // The kernels read the pairs from mapped host memory: the last step's copies are done
  // (every step ends in a synchronization; this one costs nothing then).
  check(cudaStreamSynchronize(stream_), "waiting for the last step");
  // This rank's copies: all of them, or (context parallelism) rank_kv_copies'.
  std::vector<KvCopy>& own = own_copies_;
  bool barrier = false;
  if (cp_size_ == 1)
    own.assign(plan.kv_copies.begin(), plan.kv_copies.end());
  else
    barrier = rank_kv_copies(plan.kv_copies, cp_rank_, cp_size_, own);
  if (own.size() > copy_pairs_capacity_) {
    if (copy_pairs_) cudaFreeHost(copy_pairs_);
    copy_pairs_ = nullptr;
    copy_pairs_capacity_ = std::max(own.size(), 2 * copy_pairs_capacity_);
    check(cudaHostAlloc(reinterpret_cast<void**>(&copy_pairs_), copy_pairs_capacity_ * sizeof(int2), cudaHostAllocMapped),
          "allocating the host tier's copy list");
  }
  for (size_t i = 0; i < own.size(); ++i) copy_pairs_[i] = {own[i].block, own[i].host_slot};
  cuda::KvCopyArgs a;
  a.cache = kv_.as<char>();
  a.host = host_pool_.get();
  a.layout = {static_cast<size_t>(block_size_) * local_.kv_dim() * sizeof(__nv_bfloat16),
              layer_kv_elements_ * sizeof(__nv_bfloat16), config_.n_layers};
  auto launch = [&](size_t from, size_t to) {  // a kernel per run of one direction
    for (size_t run = from; run < to;) {
      size_t end = run;
      while (end < to && own[end].to_host == own[run].to_host) ++end;
      a.pairs = copy_pairs_ + run;
      a.n = static_cast<int32_t>(end - run);
      a.to_host = own[run].to_host;
      check(cuda::copy_kv_blocks(a, stream_), "copying KV blocks to or from the host tier");
      run = end;
    }
  };
  if (!barrier) return launch(0, own.size());
  const auto loads = static_cast<size_t>(
      std::find_if(own.begin(), own.end(), [](const KvCopy& c) { return !c.to_host; }) - own.begin());
  launch(0, loads);
  // Every rank's saves before any rank's loads: this rank's are done once its stream is,
  // and the barrier waits for the others' (also where it is not stream-ordered).
  check(cudaStreamSynchronize(stream_), "waiting for the host tier's saves");
  if (const parallel::CommStatus s = cp_comm_->barrier(stream_); !s.ok())
    throw std::runtime_error("context-parallel host-tier barrier failed: " + std::string(parallel::to_string(s.code)) +
                             " " + s.message);
  launch(loads, own.size());
}

void CudaBackend::forward(const BatchPlan& plan, std::vector<float>& logits) {
  begin_step(plan);
  logits.resize(plan.logits_rows.size() * static_cast<size_t>(config_.vocab));
  if (plan.num_tokens() == 0) return;
  if (cp_) return run_step(plan, prepare_context_step(plan), &logits, {}, nullptr);
  const Step step = analyze(plan, block_size_);
  if (step.tokens == 0) return;
  prepare_step(plan, step);
  run_step(plan, step, &logits, {}, nullptr);
}

void CudaBackend::forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows,
                                 std::vector<int32_t>& ids) {
  begin_step(plan);
  SY_CHECK_MSG(rows.size() == plan.logits_rows.size(), "%zu sampling rows for %zu logits rows",
               rows.size(), plan.logits_rows.size());
  ids.assign(rows.size(), 0);
  if (plan.num_tokens() == 0) return;
  if (cp_) return run_step(plan, prepare_context_step(plan), nullptr, rows, &ids);
  const Step step = analyze(plan, block_size_);
  if (step.tokens == 0) return;
  prepare_step(plan, step);
  run_step(plan, step, nullptr, rows, &ids);
}

void CudaBackend::prepare_step(const BatchPlan& plan, const Step& step) {
  check(cudaSetDevice(device_), "selecting the device");
  ensure_capacity(step.tokens, plan.kv_indices.size());
  upload_plan(plan);
}

void CudaBackend::run_step(const BatchPlan& plan, const Step& step, std::vector<float>* logits,
                           std::span<const RowSampling> rows, std::vector<int32_t>* ids) {
  const cuda::ProgrammaticLaunch pdl(programmatic_launch_);
  const int64_t V = config_.vocab;
  // Context-parallel ranks past the first compute no logits: the group returns rank 0's.
  const auto R = cp_ && cp_->rank() > 0 ? 0 : static_cast<int64_t>(plan.logits_rows.size());
  const bool graph = step.decode && step.tokens <= max_num_seqs_ && graphs_allowed_;
  bool sampled = false;  // some row draws (temperature > 0): the sampler, else argmax
  for (const RowSampling& r : rows) sampled = sampled || r.temperature > 0;
  // A graph's logits are every token's row in token order; an eager step's are the
  // plan's rows in chunks of logits_capacity_.
  const int64_t choose_rows = graph ? step.tokens : R;
  if (ids) {
    ensure_choice_capacity(choose_rows,
                           sampled ? std::min<int64_t>(choose_rows, logits_capacity_) : 0);
    if (sampled && choose_rows > 0) upload_row_params(rows, graph ? plan.logits_rows.data() : nullptr, choose_rows);
  }
  if (graph) {
    run_graph(step);
    if (ids) {
      enqueue_choose(0, step.tokens, sampled);
    } else {
      const float* logits_dev = gathered_logits(step.tokens);
      bool in_order = R == step.tokens;
      for (int64_t i = 0; in_order && i < R; ++i)
        in_order = plan.logits_rows[static_cast<size_t>(i)] == i;
      if (in_order) {
        check(
            cudaMemcpyAsync(logits->data(), logits_dev, static_cast<size_t>(R * V) * sizeof(float),
                            cudaMemcpyDeviceToHost, stream_),
            "copying logits");
      } else {
        for (int64_t i = 0; i < R; ++i)
          check(cudaMemcpyAsync(
                    logits->data() + i * V,
                    logits_dev + static_cast<int64_t>(plan.logits_rows[static_cast<size_t>(i)]) * V,
                    static_cast<size_t>(V) * sizeof(float), cudaMemcpyDeviceToHost, stream_),
                "copying logits");
      }
    }
  } else {
    enqueue_layers(step);
    // The wanted rows of the normalized output, in chunks through the LM head; a
    // context-parallel rank's come from every rank, in the gathered order.
    const __nv_bfloat16* final_rows = cp_ ? cp_->gather_rows(h_.as<__nv_bfloat16>(), config_.hidden) : h_.as<__nv_bfloat16>();
    const int64_t final_count = cp_ ? cp_->gathered_rows() : step.tokens;
    const PlanLayout p = plan_layout();
    for (int64_t r0 = 0; r0 < R; r0 += logits_capacity_) {
      const int64_t n = std::min<int64_t>(logits_capacity_, R - r0);
      cuda::GatherRowsArgs g;
      g.table = final_rows;
      g.table_rows = final_count;
      g.cols = config_.hidden;
      g.ids = plan_.as<int32_t>() + p.logits_rows + r0;
      g.rows = n;
      g.out_bf16 = rows_h_.as<__nv_bfloat16>();
      check(cuda::gather_rows(g, stream_), "gathering logits rows");
      enqueue_lm_head(rows_h_.as<__nv_bfloat16>(), n);
      if (ids)
        enqueue_choose(r0, n, sampled);
      else
        check(cudaMemcpyAsync(logits->data() + r0 * V, gathered_logits(n),
                              static_cast<size_t>(n * V) * sizeof(float), cudaMemcpyDeviceToHost,
                              stream_),
              "copying logits");
    }
  }
  if (ids && choose_rows > 0)
    check(cudaMemcpyAsync(ids_host_, ids_.get(), static_cast<size_t>(choose_rows) * sizeof(int32_t),
                          cudaMemcpyDeviceToHost, stream_),
          "copying token ids");
  check(cudaStreamSynchronize(stream_), "running the step");
  if (ids)
    for (int64_t i = 0; i < R; ++i)
      (*ids)[static_cast<size_t>(i)] =
          ids_host_[graph ? plan.logits_rows[static_cast<size_t>(i)] : i];
}

// Grows the id buffers to `rows` and the sampler's workspace to `sampled_rows`; the
// stream is idle between steps, so the old buffers are free.
void CudaBackend::ensure_choice_capacity(int64_t rows, int64_t sampled_rows) {
  if (rows > ids_capacity_) {
    check(cudaStreamSynchronize(stream_), "finishing the last step");
    const int64_t n = std::max<int64_t>(rows, logits_capacity_);
    check(ids_.allocate(static_cast<size_t>(n) * sizeof(int32_t)), "allocating token ids");
    check(argmax_workspace_.allocate(cuda::argmax_workspace_bytes(n)),
          "allocating argmax workspace");
    check(cudaMemsetAsync(argmax_workspace_.get(), 0, argmax_workspace_.bytes(), stream_),
          "clearing argmax workspace");
    check(row_params_.allocate(static_cast<size_t>(n) * sizeof(cuda::SamplingRowParams)),
          "allocating sampling parameters");
    if (ids_host_) cudaFreeHost(ids_host_);
    ids_host_ = nullptr;
    check(cudaMallocHost(&ids_host_, static_cast<size_t>(n) * sizeof(int32_t)),
          "allocating pinned token ids");
    ids_capacity_ = n;
  }
  if (sampled_rows > workspace_rows_) {
    check(cudaStreamSynchronize(stream_), "finishing the last step");
    check(sample_workspace_.allocate(cuda::sampling_workspace_bytes(sampled_rows, config_.vocab)),
          "allocating the sampler's workspace");
    workspace_rows_ = sampled_rows;
  }
}

void CudaBackend::upload_row_params(std::span<const RowSampling> rows, const int32_t* to,
                                    int64_t n) {
  row_params_host_.assign(static_cast<size_t>(n), cuda::SamplingRowParams{0.0f, 0, 1.0f, 0.0f, 0});
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowSampling& r = rows[i];
    row_params_host_[to ? static_cast<size_t>(to[i]) : i] = {r.temperature, r.top_k, r.top_p,
                                                             r.min_p, r.uniform};
  }
  check(cudaMemcpyAsync(row_params_.get(), row_params_host_.data(),
                        row_params_host_.size() * sizeof(cuda::SamplingRowParams),
                        cudaMemcpyHostToDevice, stream_),
        "uploading sampling parameters");
}

void CudaBackend::enqueue_choose(int64_t first, int64_t n, bool sampled) {
  if (sampled) {
    cuda::SampleArgs a;
    a.logits = gathered_logits(n);
    a.rows = n;
    a.vocab = config_.vocab;
    a.params = row_params_.as<cuda::SamplingRowParams>() + first;
    a.out = ids_.as<int32_t>() + first;
    a.workspace = sample_workspace_.get();
    a.workspace_bytes = sample_workspace_.bytes();
    check(cuda::sample(a, stream_), "sampling");
  } else {
    cuda::ArgmaxArgs a{logits_.as<float>(), n, config_.vocab, ids_.as<int32_t>() + first};
    a.variant = n <= 65535 ? 0 : 1;
    a.workspace = argmax_workspace_.get();
    if (comm_) {  // each rank's best over its vocabulary slice, then the best of those
      a.vocab = shape_.vocab;
      a.row_stride = shape_.vocab_stride;
      a.index_offset = shape_.vocab0;
      a.variant = 0;
      a.out = nullptr;
      a.keys = shard_keys_.as<unsigned long long>();
      check(cuda::argmax(a, stream_), "argmax over the vocabulary slice");
      const parallel::CommStatus s = comm_->all_gather(shard_keys_.as<float>(), static_cast<size_t>(n) * 2,
                                                       gathered_keys_.as<float>(), stream_);
      check(s.ok() ? cudaSuccess : cudaErrorUnknown, s.ok() ? "gathering argmax keys" : s.message.c_str());
      check(cuda::argmax_merge_keys(gathered_keys_.as<unsigned long long>(), shape_.size, n,
                                    ids_.as<int32_t>() + first, stream_),
            "merging argmax keys");
      return;
    }
    check(cuda::argmax(a, stream_), "argmax");
  }
}

void CudaBackend::run_graph(const Step& step) {
  auto it = graphs_.find(step.tokens);
  if (it == graphs_.end()) {
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
          "starting a graph capture");
    capturing_ = true;
    enqueue_layers(step);
    enqueue_lm_head(h_.as<__nv_bfloat16>(), step.tokens);
    cudaGraph_t graph = nullptr;
    capturing_ = false;
    check(cudaStreamEndCapture(stream_, &graph), "capturing the decode step");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "instantiating the decode graph");
    it = graphs_.emplace(step.tokens, exec).first;
  }
  check(cudaGraphLaunch(it->second, stream_), "replaying the decode graph");
}

}  // namespace sy
