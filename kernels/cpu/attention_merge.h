// Merging partial attention states (DESIGN.md, "Parallel groups": decode context
// parallelism). Attention of the same query rows over disjoint sets of keys, each part
// with its output and log-sum-exp (AttentionParams::lse), merged as if attention had run
// over the union: lse = log Σ_p exp(lse_p), out = Σ_p exp(lse_p − lse) · out_p. Parts are
// added in index order, so the result does not depend on which part arrived first.
#pragma once

#include <cstdint>

namespace sy::cpu {

// parts: outs[p] [rows, heads, head_dim] and lses[p] [rows, heads] for p < num_parts; a
// part with lse -inf saw no key and weighs nothing. out/lse receive the merge (lse may be
// null); out may alias outs[0] only if num_parts == 1.
void merge_attention_states(const float* const* outs, const float* const* lses, int num_parts, float* out,
                            float* lse, int64_t rows, int heads, int head_dim);

}  // namespace sy::cpu
