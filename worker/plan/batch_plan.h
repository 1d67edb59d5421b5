// One engine step as the scheduler hands it to a backend: the tokens to run, where they
// sit, which KV blocks each sequence owns, and which rows need logits. The backend
// executes it and never sees requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/paged_kv.h"

namespace sy {

struct BatchPlan {
  std::vector<int32_t> token_ids;          // [T] flattened over sequences
  std::vector<int32_t> positions;          // [T] absolute position of each token
  std::vector<int32_t> cu_seqlens;         // [S + 1] sequence s owns rows [cu[s], cu[s+1])
  std::vector<int32_t> kv_indptr;          // [S + 1] CSR over kv_indices
  std::vector<int32_t> kv_indices;         // block ids, covering each sequence's context
  std::vector<int32_t> kv_last_block_len;  // [S] tokens in each sequence's last block
  std::vector<int32_t> logits_rows;        // rows of T whose logits are returned, in order
  // Copies between the cache and the backend's host tier, run in order before the
  // step's tokens (KvCacheManager::take_copies).
  std::vector<KvCopy> kv_copies;

  int32_t num_seqs() const { return static_cast<int32_t>(cu_seqlens.empty() ? 0 : cu_seqlens.size() - 1); }
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }

  PagedKvTable kv_table(int32_t block_size) const {
    return {kv_indptr.data(), kv_indices.data(), kv_last_block_len.data(), num_seqs(), block_size};
  }

  // Adds a sequence whose context (after this step) spans `blocks`, running `tokens`
  // that start at position `first_pos`; `want_logits` = which of the new tokens need
  // logits: none, the last, or all.
  enum class Logits { kNone, kLast, kAll };
  void add_sequence(const std::vector<int32_t>& tokens, int32_t first_pos, const std::vector<int32_t>& blocks,
                    int32_t block_size, Logits want_logits);

  // Checks the plan's internal consistency; returns an empty string or what is wrong.
  std::string validate(int32_t block_size, int32_t num_blocks, int32_t vocab, int32_t num_host_blocks = 0) const;
};

}  // namespace sy
