// A backend executes batch plans on one device (or device group). It owns the weights
// and the KV cache memory; block ids in the plan index its cache. Backends are chosen by
// name, as ggml and lmdeploy choose theirs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/model_source.h"
#include "worker/plan/batch_plan.h"
#include "worker/model/model_config.h"

namespace sy {

// Choices a benchmark compares as arms of one process (bench/engine_bench.cpp --arms).
// Only bench/ sets them; production runs the defaults, each the measured winner on the
// H200 (docs/PERFORMANCE.md). Variants that lost are deleted (the gated GEMV, the GEMV
// weight-size limit, the timed cuBLASLt candidates, the GEMV splits 1 and 2 as options,
// the unfused decode path, the one-launch decode attention, the strided RMSNorm and
// per-token RoPE kernels).
struct BackendTuning {
  // cuda: bf16 products of at most this many rows (decode batches up to it) run the GEMV
  // kernel (kernels/cuda/gemv_bf16.cuh) instead of cuBLASLt; 0: cuBLASLt always.
  int32_t gemv_max_rows = 1;
  // cuda: quantized products of 9 to this many rows (at most cuda::kQuantGemmMaxRows, 64)
  // run the quantized GEMM (kernels/cuda/quant_gemm.cuh); larger ones, or all past the
  // GEMV's 8 with 0, expand the weight to bf16 for cuBLASLt.
  int32_t quant_gemm_max_rows = 64;
  // cuda: warps per CTA of the prefill attention, 4 or 8 (0: the kernel's default).
  int32_t prefill_warps = 0;
  // cuda: prefill attention kernel, 1 (default) Hopper's warpgroup MMA where the build and
  // device have it (compute capability 9.0; head_dim 128, other head dims run 0), else 0,
  // mma.sync (cuda::PagedAttentionArgs::prefill_kernel).
  int32_t prefill_attention_kernel = 1;
  // cuda: the step's own kernels launch with programmatic dependent launch
  // (kernels/cuda/launch.cuh): each may be scheduled, and load its weights, while the
  // kernel ahead of it finishes.
  bool programmatic_launch = true;
  // cuda, deterministic: the row count whose cuBLASLt heuristic choice becomes a weight
  // shape's one algorithm (GemmBf16::set_fixed_algorithm_rows).
  int32_t deterministic_gemm_rows = 256;
  // cuda tensor parallelism: the collectives' communicator, "auto" (ranks sharing a GPU:
  // "local"; distinct GPUs: "peer+nccl", or "peer" without NCCL), "local", "peer", "nccl"
  // or "peer+nccl", and under peer+nccl the largest message (bytes per rank) the peer
  // kernels take. 256 KiB is a first guess until the crossover is measured on two GPUs
  // (switchyard-allreduce-bench, docs/PERFORMANCE.md).
  std::string collectives = "auto";
  int64_t peer_max_bytes = int64_t{256} << 10;
  // cpu, not deterministic: prompts' block-type products on AMX int8 tiles where the
  // processor has AMX (cpu::LinearOptions::amx); false: dequantized sgemm.
  bool cpu_amx = true;
  // cpu: the SIMD kernels prefetch the next tile's weight rows (cpu::LinearOptions::prefetch).
  bool cpu_prefetch = true;
};

struct BackendOptions {
  int32_t block_size = 16;
  // Tensor-parallel ranks (DESIGN.md, "Parallel groups"): cpu, ranks as threads of this
  // process over a "threads" communicator (GroupBackend). Shapes tp does not divide are
  // refused (std::invalid_argument).
  int32_t tp = 1;
  // Context-parallel ranks (prefill PCP, decode DCP; worker/plan/context_split.h): cpu,
  // a group of tp × pcp ranks as threads. Each rank holds 1/pcp of the KV, so the
  // group's KV capacity is pcp × one rank's (num_kv_blocks and kv_memory_bytes are per
  // rank). cuda: a group of tp × pcp ranks, one device each (cuda_devices), every step
  // eager (worker/backend/cuda_context_attention.h).
  int32_t pcp = 1;
  // Batch-invariant numerics (docs/NUMERICS.md): a sequence's logits are the same bits
  // whatever else shares its batch, however its prompt is chunked, whether a position is
  // computed by a prefill or a decode step and whether its prefix came from the cache, so
  // that a seeded stream continued on another replica draws the same tokens. cpu: the
  // fixed-order GEMM (kernels/cpu/invariant_gemm.h) instead of OpenBLAS; cuda: every
  // product through cuBLASLt with one algorithm per weight shape (no GEMV, no split-K),
  // decode rows through the prefill attention kernel (one fixed key tiling for every
  // step kind), RoPE and the KV write unfused. Unset: the backend's default, on for cpu
  // (it costs nothing at serving sizes) and off for cuda (2.2-3x slower decode on the
  // H200 today); the gateway asks its workers for it (replicas.yaml worker.numerics).
  std::optional<bool> deterministic;
  // cpu: widen every weight to float32 at load (the reference path tests compare with:
  // 2x a bf16 model's memory, 4x a Q8_0 one's) instead of computing on the stored type.
  bool cpu_float32_weights = false;
  // cpu: keep the KV cache in IEEE half instead of float32 (kernels/cpu/attention.h):
  // half the bytes a decode step's attention reads and twice the blocks per byte of
  // kv_memory_bytes, each key and value rounded once (docs/NUMERICS.md). Not with pcp > 1.
  bool cpu_kv_f16 = false;
  int32_t num_kv_blocks = 0;  // 0: derive from kv_memory_bytes
  size_t kv_memory_bytes = size_t{2} << 30;
  // Host memory per rank for the KV host tier (common/kv_cache/kv_cache_manager.h):
  // prefix blocks evicted from the cache are kept there and copied back on a hit
  // (cuda: pinned, read and written by a copy kernel). 0: none. With pcp > 1 the
  // context-parallel ranks of one tensor-parallel index share one tier of pcp × this
  // (a block's home rank copies it; cuda: not yet run on a GPU).
  size_t kv_host_memory_bytes = 0;
  // Allocate the host tier on a thread of its own (each tensor-parallel rank its own, a
  // context-parallel group one per tensor-parallel index); the backend starts without
  // it and Backend::take_host_tier() hands it over once allocated
  // (worker/backend/background_host_tier.h). Without this create_backend waits for it.
  bool kv_host_in_background = false;
  // cuda: with num_kv_blocks 0 and this > 0, the KV cache takes this fraction of the
  // device memory still free after weights and buffers, instead of kv_memory_bytes.
  double kv_free_memory_fraction = 0;
  // cuda: decode steps of 1..max_num_seqs sequences replay a CUDA graph per batch size.
  int32_t max_num_seqs = 16;
  // cuda: tokens per step the activation buffers hold from the start (0: a default);
  // larger steps grow them.
  int32_t max_step_tokens = 0;
  BackendTuning tuning;  // bench/ only
};

// How forward_sample() chooses one row's token: sample_token's rules (worker/engine/
// sampler.h) after the penalties, which forward_sample() does not apply.
struct RowSampling {
  float temperature = 0.0f;  // 0: argmax, the first index on ties
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  double uniform = 0;  // sampling_uniform(seed, token index)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual int32_t block_size() const = 0;
  virtual int32_t num_kv_blocks() const = 0;
  // Blocks the host tier holds (BackendOptions::kv_host_memory_bytes); 0: no tier.
  virtual int32_t num_host_kv_blocks() const { return 0; }
  // A host tier allocated in the background (BackendOptions::kv_host_in_background):
  // once allocated, the first call takes it into use and returns its blocks (then
  // num_host_kv_blocks()); 0 before, after, or without one. Throws the allocation's
  // error, once. Between steps only: the engine calls it before each.
  virtual int32_t take_host_tier() { return 0; }
  // True once a background host tier is allocated (or failed) and not yet taken.
  virtual bool host_tier_allocated() const { return false; }
  // Blocks until a background host tier's allocation has ended (create_backend, for a
  // tier wanted at once; tests, to take it at a known step).
  virtual void wait_host_tier() const {}

  // Runs one step: runs plan.kv_copies, writes this step's keys and values into the
  // cache and returns the logits of plan.logits_rows, row-major [logits_rows.size(),
  // vocab], in `logits`.
  virtual void forward(const BatchPlan& plan, std::vector<float>& logits) = 0;

  // Whether forward_sample() is implemented: the backend chooses tokens where the
  // logits are and only the ids cross to the host.
  virtual bool samples_on_device() const { return false; }
  // Runs one step like forward() and chooses the token of logits row i by rows[i]
  // (rows.size() == plan.logits_rows.size()); `ids` gets them in row order. Throws
  // std::logic_error where samples_on_device() is false.
  virtual void forward_sample(const BatchPlan& plan, std::span<const RowSampling> rows,
                              std::vector<int32_t>& ids);
};

// KV bytes per block for a model: layers × block_size × kv_dim × (K and V) × bytes per
// value (float32 unless given: 2 for the cpu half cache).
size_t kv_bytes_per_block(const ModelConfig& c, int32_t block_size, size_t bytes_per_value = sizeof(float));

// Runs `copies` in order between `cache` (laid out as `l` says) and `host` slots, on the
// calling thread (the cpu backend's copies).
void copy_kv_blocks(const KvBlockLayout& l, std::span<const KvCopy> copies, char* cache, char* host);

// Context parallelism (worker/plan/context_split.h): the copies rank `rank` of `ranks`
// runs into `own`, those of the blocks it is home to, each at its slot there, every save
// before every load (the plans' own order as far as it matters: KvCopy). Returns whether
// the plan both saves and loads: then every rank waits at a barrier between its saves
// and its loads, since another rank may load a slot this one saves.
bool rank_kv_copies(std::span<const KvCopy> copies, int32_t rank, int32_t ranks, std::vector<KvCopy>& own);

// Runs rank_kv_copies' copies into and out of a host tier the ranks share, `between()`
// (the barrier) after the saves where it says so.
void copy_kv_blocks_of_rank(const KvBlockLayout& l, std::span<const KvCopy> copies, char* cache, char* host,
                            int32_t rank, int32_t ranks, const std::function<void()>& between);

// The cuda devices `name` gives `ranks` ranks (a group's tp × pcp), in rank order:
// "cuda" → 0..ranks-1, "cuda:N" → N..N+ranks-1, "cuda:A,B,..." → that list (repeats
// allowed: ranks sharing a GPU). Empty when `name` is no cuda device name ("cpu",
// "cuda:x", ...); throws std::invalid_argument for a list whose length is not ranks.
std::vector<int> cuda_devices(const std::string& name, int ranks);

// Creates the backend `name`: "cpu", or where built "cuda" / "cuda:N" (device N, default
// 0). Throws std::runtime_error for an unknown name or an unusable device,
// ModelFileError for a bad model.
std::unique_ptr<Backend> create_backend(const std::string& name, const ModelSource& src, const ModelConfig& config,
                                        const BackendOptions& options);

}  // namespace sy
