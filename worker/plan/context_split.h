// Context parallelism over a BatchPlan (DESIGN.md, "Parallel groups"): which of a step's
// rows each of `size` context-parallel ranks runs, and where each logical KV block lives.
//
// Rows: a sequence's new tokens split into 2·size chunks, rank r taking chunks r and
// 2·size−1−r (arXiv 2411.01783), so that causal attention work is even; a sequence with
// one new token (a decode step) goes whole to rank s % size, spreading a decode batch.
//
// Blocks: logical block b (the engine's id) lives on rank b % size, in that rank's slot
// b / size. The mapping is static, so the engine allocates logical blocks as for one
// device, a prefix-cache block has one home whichever sequence reuses it, and a rank's
// cache holds num_blocks / size slots: the group's capacity is size × a rank's. The
// engine hands a fresh sequence consecutive ids, so its blocks interleave over the ranks
// (each holds every size-th block of the context) and decode reads 1/size of the KV per
// rank.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/plan/batch_plan.h"

namespace sy {

// A block table's own storage, for tables derived from a plan.
struct KvTableStorage {
  std::vector<int32_t> indptr{0}, indices, last_block_len;
  int32_t block_size = 16;
  PagedKvTable table() const {
    return {indptr.data(), indices.data(), last_block_len.data(), static_cast<int32_t>(last_block_len.size()), block_size};
  }
  // Appends a sequence holding `blocks` with `tokens` tokens in total (0: no block).
  void add(const std::vector<int32_t>& blocks, int64_t tokens);
};

struct ContextSplit {
  int32_t size = 1;
  std::vector<std::vector<int32_t>> rows;  // rows[r]: the plan rows rank r runs, increasing
  // The most rows any rank runs (collectives pad every rank's part to it).
  int32_t max_rows() const;
};

// The split of `plan`'s rows. Checks that each sequence's rows are consecutive positions
// (BatchPlan::add_sequence builds them so).
ContextSplit split_context(const BatchPlan& plan, int32_t size);

inline int32_t block_home(int32_t block, int32_t size) { return block % size; }
inline int32_t block_slot(int32_t block, int32_t size) { return block / size; }

// The plan's block table with rank `rank`'s blocks as its slots and every other rank's
// as -1 (cpu::write_kv skips those): where this rank stores the step's keys and values.
std::vector<int32_t> home_slots(const BatchPlan& plan, int32_t rank, int32_t size);

// Per sequence of the plan, rank `rank`'s slots among the blocks of the context before
// this step's tokens (positions < the sequence's first new position), in order; the last
// one cut to the tokens it holds. Every key in it precedes every new token.
KvTableStorage context_shard(const BatchPlan& plan, int32_t block_size, int32_t rank, int32_t size);

}  // namespace sy
