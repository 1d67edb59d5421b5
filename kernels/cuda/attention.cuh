// kernels/cuda/attention.cuh
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>
namespace sy::cuda {
// One layer's attention over the paged KV cache. KV cache of a layer: k_cache and v_cache,
// each [num_blocks, n_kv_heads, block_size, head_dim] bf16 (same layout as the CPU backend's
// float cache, kernels/cpu/attention.h). Block table as CSR (kernels/paged_kv.h), all
// pointers device pointers.
struct PagedAttentionArgs {
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;  // n_kv_heads divides n_heads (GQA, MQA)
  float scale = 1.0f;
  const __nv_bfloat16* q = nullptr; int64_t q_stride = 0;  // row t, head h: q + t*q_stride + h*head_dim
  const __nv_bfloat16* k_new = nullptr; const __nv_bfloat16* v_new = nullptr; int64_t kv_stride = 0;  // this step's K/V rows, same indexing with n_kv_heads
  __nv_bfloat16* out = nullptr;  // [num_tokens, n_heads*head_dim], contiguous
  __nv_bfloat16* k_cache = nullptr; __nv_bfloat16* v_cache = nullptr;
  int block_size = 16;
  const int32_t* kv_indptr = nullptr; const int32_t* kv_indices = nullptr; const int32_t* kv_last_block_len = nullptr;
  const int32_t* cu_seqlens = nullptr;  // [num_seqs+1] query rows of each sequence
  const int32_t* positions = nullptr;   // [num_tokens] absolute position of each row
  int num_seqs = 0, num_tokens = 0;
  void* workspace = nullptr; size_t workspace_bytes = 0;  // for split-K partials
  // Prefill tile shape, for benchmarks comparing variants: query rows per warp, 16 or 32
  // (32 only for head_dim >= 64); 0 picks the default.
  int prefill_rows_per_warp = 0;
  // Prefill warps per CTA, 4 or 8 (8: twice the query rows share each key/value tile in
  // shared memory); 0 picks the default.
  int prefill_warps = 0;
  // Prefill kernel: 0 mma.sync (attention_prefill.cu), 1 warpgroup MMA
  // (attention_prefill_wgmma.cu: sm_90a, head_dim 128; other head dims run kernel 0;
  // cudaErrorNotSupported where prefill_wgmma_available() is false).
  int prefill_kernel = 0;
  // Decode kernel, for benchmarks comparing variants: 1 CUDA cores, 2 tensor cores (GQA
  // groups >= 2, head_dim >= 16), each followed by a kernel merging the splits; 0 picks 2
  // where tensor cores apply, else 1. (A one-launch form, the last CTA merging, lost to
  // the two launches on the H200 and is gone: docs/PERFORMANCE.md.)
  int decode_variant = 0;
  // Optional [num_tokens, n_heads] fp32: each row's log-sum-exp of its scaled scores
  // (natural log; -inf for a row that saw no key), so attention over disjoint key sets
  // can be merged (merge_attention_states, attention_merge.cuh). Null: not written.
  float* lse = nullptr;
};
// Stores this step's K/V rows at their positions in the cache.
cudaError_t write_kv_cache(const PagedAttentionArgs& a, cudaStream_t stream);
// Decode: every sequence has exactly one query row (num_tokens == num_seqs), the row's
// position = context length - 1. The launch shape depends only on num_seqs, the head
// counts, head_dim and num_splits, never on context lengths (read on the device), so the
// call can be captured in a CUDA graph and replayed with other contexts. Long contexts are
// split over num_splits CTAs per (sequence, kv head) and merged by log-sum-exp.
cudaError_t paged_decode_attention(const PagedAttentionArgs& a, int num_splits, cudaStream_t stream);
// The split count the backend should use for a decode batch (depends on batch shape and
// SM count only, so a CUDA graph per batch size stays valid for any context).
int decode_num_splits(int num_seqs, int n_kv_heads, int num_sms);
// Any mix of rows per sequence (prefill chunks, and decode rows too): causal, each row
// attends to every cached token of its sequence up to its own position, including prefix
// blocks cached by earlier steps. Flash-style tiling with online softmax on tensor cores.
// max_q_len / max_context: host-known maxima over the batch.
cudaError_t paged_prefill_attention(const PagedAttentionArgs& a, int max_q_len, int max_context, cudaStream_t stream);
// Whether prefill_kernel 1 (warpgroup MMA) runs here: the build holds sm_90a code and the
// current device is compute capability 9.0.
bool prefill_wgmma_available();
size_t attention_workspace_bytes(int max_tokens, int n_heads, int head_dim, int max_splits);
}  // namespace sy::cuda
