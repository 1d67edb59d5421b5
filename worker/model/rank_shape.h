// A tensor-parallel rank's slice of a model (DESIGN.md, "Parallel groups"): QKV column-
// parallel by heads, O row-parallel, gate/up column-parallel, down row-parallel, the LM
// head by vocabulary. With tp > n_kv_heads the KV heads are replicated: each KV head is
// held by tp / n_kv_heads ranks, each with the query heads of its share of the group.
#pragma once

#include <cstdint>
#include <string>

#include "worker/model/model_config.h"

namespace sy {

struct TensorParallel {
  int rank = 0;
  int size = 1;
};

// A context-parallel rank (prefill PCP, decode DCP): it holds the whole tensor-parallel
// slice of the weights and 1/size of the sequences' KV (worker/plan/context_split.h).
struct ContextParallel {
  int rank = 0;
  int size = 1;
};

struct RankShape {
  int rank = 0, size = 1;
  int q_head0 = 0, n_heads = 0;      // query heads [q_head0, q_head0 + n_heads)
  int kv_head0 = 0, n_kv_heads = 0;  // KV heads [kv_head0, kv_head0 + n_kv_heads)
  int ffn0 = 0, ffn = 0;             // FFN columns [ffn0, ffn0 + ffn)
  // Vocabulary rows [vocab0, vocab0 + vocab) of the LM head; every rank's slice is
  // padded to vocab_stride rows so that the slices gather evenly (padded rows: -inf).
  int vocab0 = 0, vocab = 0, vocab_stride = 0;

  // The slice of rank tp.rank; throws std::invalid_argument naming what does not divide
  // (query heads by tp; KV heads by tp, or tp by KV heads; the FFN width by tp).
  static RankShape of(const ModelConfig& c, TensorParallel tp);

  bool whole() const { return size == 1; }
  // The model as this rank sees it: its own head counts and FFN width (vocab stays whole:
  // the embedding is held whole by every rank).
  ModelConfig local(const ModelConfig& c) const;
  std::string describe() const;
};

}  // namespace sy
