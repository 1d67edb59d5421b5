// float32 matrix products through OpenBLAS.
#pragma once

#include <cstdint>

namespace sy::cpu {

// y[m, n] = x[m, k] · w[n, k]ᵀ (+ y if accumulate). Row-major; w is a weight matrix
// stored as [out_features, in_features], as both GGUF and safetensors store them.
void matmul_nt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate = false);

}  // namespace sy::cpu
