// Gated activations of the feed-forward block.
#pragma once

#include <cstdint>

namespace sy::cpu {

// out[rows, n] = silu(gate_up[r, 0:n]) * gate_up[r, n:2n]; gate and up come from one
// fused GEMM, so each input row holds 2n values.
void silu_mul(const float* gate_up, float* out, int64_t rows, int64_t n);

}  // namespace sy::cpu
