#include "worker/plan/context_split.h"

#include <algorithm>

#include "common/check.h"

namespace sy {

void KvTableStorage::add(const std::vector<int32_t>& blocks, int64_t tokens) {
  indices.insert(indices.end(), blocks.begin(), blocks.end());
  indptr.push_back(static_cast<int32_t>(indices.size()));
  last_block_len.push_back(blocks.empty() ? 0 : static_cast<int32_t>(tokens - (static_cast<int64_t>(blocks.size()) - 1) * block_size));
}

int32_t ContextSplit::max_rows() const {
  size_t m = 0;
  for (const auto& r : rows) m = std::max(m, r.size());
  return static_cast<int32_t>(m);
}

ContextSplit split_context(const BatchPlan& plan, int32_t size) {
  SY_CHECK(size >= 1);
  ContextSplit split;
  split.size = size;
  split.rows.resize(static_cast<size_t>(size));
  std::vector<int32_t> owner(static_cast<size_t>(plan.num_tokens()));
  const int32_t chunks = 2 * size;
  for (int32_t s = 0; s < plan.num_seqs(); ++s) {
    const int32_t r0 = plan.cu_seqlens[s], n = plan.cu_seqlens[s + 1] - r0;
    for (int32_t i = 1; i < n; ++i)
      SY_CHECK_MSG(plan.positions[r0 + i] == plan.positions[r0] + i, "sequence %d's rows are not consecutive positions", s);
    for (int32_t i = 0; i < n; ++i) {
      if (n == 1) {
        owner[static_cast<size_t>(r0)] = s % size;
        continue;
      }
      const int32_t c = static_cast<int32_t>((static_cast<int64_t>(i) * chunks) / n);  // chunk c = [n·c/2P, n·(c+1)/2P)
      owner[static_cast<size_t>(r0 + i)] = c < size ? c : chunks - 1 - c;
    }
  }
  for (int32_t t = 0; t < plan.num_tokens(); ++t) split.rows[static_cast<size_t>(owner[static_cast<size_t>(t)])].push_back(t);
  return split;
}

std::vector<int32_t> home_slots(const BatchPlan& plan, int32_t rank, int32_t size) {
  std::vector<int32_t> slots(plan.kv_indices.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const int32_t b = plan.kv_indices[i];
    slots[i] = block_home(b, size) == rank ? block_slot(b, size) : -1;
  }
  return slots;
}

KvTableStorage context_shard(const BatchPlan& plan, int32_t block_size, int32_t rank, int32_t size) {
  KvTableStorage t;
  t.block_size = block_size;
  std::vector<int32_t> mine;
  for (int32_t s = 0; s < plan.num_seqs(); ++s) {
    const int64_t before = plan.cu_seqlens[s + 1] > plan.cu_seqlens[s] ? plan.positions[plan.cu_seqlens[s]] : 0;
    const int64_t n_blocks = (before + block_size - 1) / block_size;
    mine.clear();
    int64_t tokens = 0;
    for (int64_t i = 0; i < n_blocks; ++i) {
      const int32_t b = plan.kv_indices[static_cast<size_t>(plan.kv_indptr[s] + i)];
      if (block_home(b, size) != rank) continue;
      mine.push_back(block_slot(b, size));
      tokens += std::min<int64_t>(block_size, before - i * block_size);
    }
    // Only the context's last block can be partly filled, and it is the last one listed.
    t.add(mine, tokens);
  }
  return t;
}

}  // namespace sy
