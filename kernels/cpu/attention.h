// Causal attention over the paged KV cache, for a batch that mixes prefill chunks and
// decode steps of several sequences.
#pragma once

#include <cstdint>

#include "kernels/paged_kv.h"

namespace sy::cpu {

class ThreadPool;

// KV cache of one layer: [num_blocks, n_kv_heads, block_size, head_dim], so that one
// head's keys in a block are contiguous for the decode loop. float32 in k and v; or, where
// k16 and v16 are set (k and v then unused), IEEE half: half the bytes a decode step
// reads, each value rounded once (to nearest even) when write_kv stores it and widened
// exactly when read, so prefill and decode read the same values.
struct KvLayer {
  float* k = nullptr;
  float* v = nullptr;
  uint16_t* k16 = nullptr;
  uint16_t* v16 = nullptr;
};

struct AttentionParams {
  int n_heads = 0;
  int n_kv_heads = 0;  // divides n_heads (GQA; 1 = MQA)
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)

  // Query rows: token t's heads start at q + t * q_stride, head h at + h * head_dim.
  const float* q = nullptr;
  int64_t q_stride = 0;
  // New keys and values of each token, laid out like q (n_kv_heads heads).
  const float* k_new = nullptr;
  const float* v_new = nullptr;
  int64_t kv_stride = 0;
  // Output rows [tokens, n_heads * head_dim].
  float* out = nullptr;
  // Optional [tokens, n_heads]: each row's log-sum-exp of its scaled scores (natural log;
  // -inf for a row that saw no key), so partial attention over disjoint key sets can be
  // merged (attention_merge.h). Null: not written.
  float* lse = nullptr;

  KvLayer cache;
  PagedKvTable table;          // blocks of each sequence, including this step's tokens
  const int32_t* cu_seqlens = nullptr;  // [num_seqs + 1]: sequence s owns query rows [cu[s], cu[s+1])
  const int32_t* positions = nullptr;   // [tokens]: absolute position of each query row
};

// Stores this step's keys and values at their positions in the cache; a block id below 0
// in the table (a block another context-parallel rank holds) is skipped.
void write_kv(const AttentionParams& p);
// The same for query rows [row_begin, row_end) only: disjoint ranges may run in parallel.
void write_kv(const AttentionParams& p, int64_t row_begin, int64_t row_end);

// out = softmax(q·kᵀ · scale, causal) · v for every query row, reading all keys of the
// sequence up to and including the row's own position from the cache. Call write_kv
// first.
void paged_attention(const AttentionParams& p, ThreadPool& pool);

}  // namespace sy::cpu
