// RMSNorm: y = x / sqrt(mean(x²) + eps) * weight, over rows of length n.
#pragma once

#include <cstdint>

namespace sy::cpu {

// y[rows, n] = rmsnorm(x[rows, n]) * weight[n]. y may alias x.
void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps);

// residual[rows, n] += delta, then y = rmsnorm(residual) * weight: the add that closes
// one sub-block fused with the norm that opens the next.
void add_rms_norm(float* residual, const float* delta, const float* weight, float* y, int64_t rows, int64_t n, float eps);

}  // namespace sy::cpu
