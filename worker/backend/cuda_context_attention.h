// Attention of one context-parallel rank of the cuda backend: the CPU design
// (cpu_context_attention.h; the split and block homes in worker/plan/context_split.h) as
// kernel launches on the rank's stream. Per step, plan() lays out on the host, and
// uploads once, the block tables below; per layer, run():
//  1. all-gathers every rank's roped QKV rows, padded to the step's largest rank (m
//     rows), into the "gathered order" [rank][m] (G = pcp · m rows);
//  2. stores the new K/V of the blocks this rank is home to (one pseudo-sequence per
//     gathered row: its home slot or no block, so write_kv_cache drops the others);
//  3. stores every new K/V row into a scratch cache at its position relative to its
//     sequence's first new token, and attends this rank's own rows to it, causally;
//  4. where some sequence has context before the step, attends every gathered row to
//     the context keys this rank holds (no mask: all precede the new rows), all-gathers
//     these partial outputs with their log-sum-exp, and merges its own rows' parts (ranks
//     in order, the new-key part last) with cuda::merge_attention_states.
// In gathered order a rank's own rows are rows [rank · m, rank · m + own) of every part,
// so the merge reads them in place. Cached KV never moves: decode gathers the new rows'
// Q/K/V and the partial states only. Not capturable (the plan changes every step): a
// context-parallel rank runs every step eagerly.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/device_buffer.cuh"
#include "worker/model/model_config.h"
#include "worker/plan/context_split.h"

namespace sy {

namespace parallel {
class Communicator;
}

class CudaContextAttention {
 public:
  // The most context-parallel ranks: the merge takes pcp + 1 parts.
  static constexpr int kMaxRanks = 15;

  // `comm`: this rank's end of the context-parallel communicator (device memory).
  // `local`: this rank's head counts (its tensor-parallel slice). Throws
  // std::invalid_argument for more ranks than kMaxRanks or an odd hidden size (rows
  // travel as pairs of bf16 in float collectives).
  CudaContextAttention(parallel::Communicator& comm, const ModelConfig& local, int32_t block_size, int prefill_kernel,
                       int prefill_warps, cudaStream_t stream);

  // Lays out `plan`'s step on the host and uploads it (on the stream).
  void plan(const BatchPlan& plan);
  int32_t own_rows() const { return own_; }
  int32_t padded_rows() const { return m_; }  // m: the most rows of any rank
  int32_t gathered_rows() const { return m_ * size_; }
  int rank() const { return rank_; }
  // This rank's rows of the plan, in plan order.
  const std::vector<int32_t>& own_plan_rows() const { return split_.rows[static_cast<size_t>(rank_)]; }
  // The gathered-order row of plan row t.
  int32_t gathered_row(int32_t t) const { return gathered_[static_cast<size_t>(t)]; }

  // One layer. local_qkv: [own rows, q + 2 kv] roped, in a buffer of at least m rows;
  // k_cache/v_cache: the layer's cache (this rank's slots); out: [own rows, q].
  void run(const __nv_bfloat16* local_qkv, __nv_bfloat16* k_cache, __nv_bfloat16* v_cache, __nv_bfloat16* out);

  // All-gathers rows [own rows, width] bf16 (in a buffer of at least m rows) into the
  // gathered order; returns [G, width] on the device, valid until the next call.
  const __nv_bfloat16* gather_rows(const __nv_bfloat16* local, int64_t width);

 private:
  // Offsets (int32 elements) of the step's tables in table_.
  struct Tables {
    size_t home_cu, home_indptr, home_indices, home_last, home_pos;
    size_t run_cu, scratch_indptr, scratch_indices, scratch_last, ctx_indptr, ctx_indices, ctx_last, run_rel, far_pos;
    size_t own_cu, own_indptr, own_indices, own_last, own_rel;
  };
  void check(cudaError_t e, const char* what) const;
  void gather(const void* send, size_t floats, void* recv, const char* what);
  void grow(cuda::DeviceBuffer& b, size_t bytes, const char* what);

  parallel::Communicator& comm_;
  const int rank_, size_;
  const int n_heads_, n_kv_heads_, head_dim_;
  const int64_t q_, kv_, qkv_, hidden_;
  const int32_t block_size_;
  const int prefill_kernel_, prefill_warps_;
  cudaStream_t stream_;

  ContextSplit split_;
  int32_t own_ = 0, m_ = 0, runs_ = 0, own_runs_ = 0, scratch_blocks_ = 0;
  int32_t max_run_ = 0, max_own_run_ = 0, max_new_ = 0, max_context_ = 0;
  bool any_context_ = false;
  std::vector<int32_t> gathered_;  // [plan rows]
  std::vector<int32_t> host_;      // the tables, uploaded into table_
  Tables t_{};

  cuda::DeviceBuffer table_, qkv_all_, scratch_k_, scratch_v_, own_out_, own_lse_, part_, parts_, rows_;
};

}  // namespace sy
