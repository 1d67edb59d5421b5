#include "kernels/cpu/activation.h"

#include <cmath>

namespace sy::cpu {

void silu_mul(const float* gate_up, float* out, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * n;
    const float* u = g + n;
    float* o = out + r * n;
    for (int64_t i = 0; i < n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

}  // namespace sy::cpu
