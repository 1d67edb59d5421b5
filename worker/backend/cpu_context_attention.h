// Attention of one context-parallel rank of the cpu backend (DESIGN.md, "Parallel
// groups"; the split and block homes in worker/plan/context_split.h). Per layer:
//  1. every rank's roped QKV rows are all-gathered, so each rank holds the step's whole
//     Q, K and V in plan order (prefill: "partial Q, gathered KV");
//  2. each rank stores the new keys and values of the blocks it is home to;
//  3. its own query rows attend to the step's new keys (causal, true positions), from a
//     scratch cache of the gathered K/V;
//  4. where some sequence has context before this step (an earlier prefill chunk, a
//     prefix-cache hit, a decode step's past), every rank attends every row of the step
//     to the context keys it holds (all of them precede the new rows), the partial
//     states are all-gathered and each rank merges its own rows' parts by log-sum-exp.
// Cached KV never moves between ranks: a decode step gathers only its new rows' Q, K, V
// and the partial states.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"
#include "worker/plan/context_split.h"

namespace sy {

namespace cpu {
class ThreadPool;
}
namespace parallel {
class Communicator;
}

// All-gathers `local` ([split.rows[rank].size(), width], rows in the split's order) from
// every rank into `full` ([plan rows, width], plan order). `send`/`recv`: scratch.
// Throws std::runtime_error when the collective fails.
void gather_rows(parallel::Communicator& comm, const ContextSplit& split, const float* local, int64_t width, float* full,
                 std::vector<float>& send, std::vector<float>& recv);

class ContextAttention {
 public:
  // `comm`: this rank's end of the context-parallel communicator (split.size ranks).
  // Heads are this rank's (its tensor-parallel slice).
  ContextAttention(const BatchPlan& plan, const ContextSplit& split, int32_t block_size, int n_heads, int n_kv_heads,
                   int head_dim, parallel::Communicator& comm, cpu::ThreadPool& pool);

  // local_qkv: [own rows, q + 2 kv] roped; cache: the layer's cache (this rank's slots);
  // out: [own rows, q] attention output of the own rows.
  void run(const float* local_qkv, cpu::KvLayer cache, float* out);

 private:
  const BatchPlan& plan_;
  const ContextSplit& split_;
  const int rank_;
  parallel::Communicator& comm_;
  cpu::ThreadPool& pool_;
  cpu::AttentionParams base_;  // heads, dims, scale
  int64_t T_, L_, Q_, KV_, QKV_;
  bool any_context_ = false;
  std::vector<int32_t> home_slots_;        // plan's block table: this rank's slots, others -1
  KvTableStorage context_;                 // per sequence: this rank's context blocks
  std::vector<int32_t> context_positions_; // [T]: past every context key
  KvTableStorage scratch_, own_scratch_;   // the step's new keys (per sequence; per own run)
  std::vector<int32_t> relative_;          // [T]: position − the sequence's first new position
  std::vector<int32_t> own_cu_, own_relative_;
  std::vector<float> qkv_, new_k_, new_v_, own_out_, own_lse_, part_, parts_, send_;
};

}  // namespace sy
