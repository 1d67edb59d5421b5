#include "worker/plan/batch_plan.h"

#include <string>

#include "common/check.h"

namespace sy {

void BatchPlan::add_sequence(const std::vector<int32_t>& tokens, int32_t first_pos, const std::vector<int32_t>& blocks,
                             int32_t block_size, Logits want_logits) {
  if (cu_seqlens.empty()) cu_seqlens.push_back(0);
  if (kv_indptr.empty()) kv_indptr.push_back(0);
  const int32_t row0 = num_tokens();
  const auto n = static_cast<int32_t>(tokens.size());
  const int32_t ctx = first_pos + n;
  SY_CHECK_MSG(static_cast<int64_t>(blocks.size()) * block_size >= ctx && (ctx == 0 || (static_cast<int64_t>(blocks.size()) - 1) * block_size < ctx),
               "%zu blocks do not cover exactly %d tokens", blocks.size(), ctx);
  for (int32_t i = 0; i < n; ++i) {
    token_ids.push_back(tokens[static_cast<size_t>(i)]);
    positions.push_back(first_pos + i);
  }
  cu_seqlens.push_back(row0 + n);
  kv_indices.insert(kv_indices.end(), blocks.begin(), blocks.end());
  kv_indptr.push_back(static_cast<int32_t>(kv_indices.size()));
  kv_last_block_len.push_back(ctx == 0 ? 0 : ctx - (static_cast<int32_t>(blocks.size()) - 1) * block_size);
  if (want_logits == Logits::kLast && n > 0) logits_rows.push_back(row0 + n - 1);
  if (want_logits == Logits::kAll)
    for (int32_t i = 0; i < n; ++i) logits_rows.push_back(row0 + i);
}

std::string BatchPlan::validate(int32_t block_size, int32_t num_blocks, int32_t vocab, int32_t num_host_blocks) const {
  const int32_t S = num_seqs();
  const int32_t T = num_tokens();
  if (positions.size() != token_ids.size()) return "positions and token_ids differ in length";
  if (kv_indptr.size() != static_cast<size_t>(S) + 1 || kv_last_block_len.size() != static_cast<size_t>(S)) return "block table sizes do not match the sequence count";
  if (S > 0 && (cu_seqlens[0] != 0 || cu_seqlens[S] != T)) return "cu_seqlens do not span the tokens";
  for (int32_t t = 0; t < T; ++t)
    if (token_ids[t] < 0 || token_ids[t] >= vocab) return "token id " + std::to_string(token_ids[t]) + " out of vocabulary";
  for (int32_t b : kv_indices)
    if (b < 0 || b >= num_blocks) return "block id " + std::to_string(b) + " out of range";
  const PagedKvTable table = kv_table(block_size);
  for (int32_t s = 0; s < S; ++s) {
    if (cu_seqlens[s + 1] < cu_seqlens[s]) return "cu_seqlens decrease";
    if (kv_last_block_len[s] < 0 || kv_last_block_len[s] > block_size) return "last_block_len out of range";
    const int64_t ctx = table.context_len(s);
    for (int32_t t = cu_seqlens[s]; t < cu_seqlens[s + 1]; ++t)
      if (positions[t] < 0 || positions[t] >= ctx) return "position " + std::to_string(positions[t]) + " outside the sequence's context";
  }
  for (int32_t r : logits_rows)
    if (r < 0 || r >= T) return "logits row out of range";
  for (const KvCopy& c : kv_copies)
    if (c.block < 0 || c.block >= num_blocks || c.host_slot < 0 || c.host_slot >= num_host_blocks)
      return "host-tier copy of block " + std::to_string(c.block) + " and slot " + std::to_string(c.host_slot) + " out of range";
  return {};
}

}  // namespace sy
