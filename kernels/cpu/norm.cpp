#include "kernels/cpu/norm.h"

#include <cmath>

namespace sy::cpu {

namespace {
void norm_row(const float* x, const float* w, float* y, int64_t n, float eps) {
  double ss = 0;  // double: rows of thousands of values lose bits in float sums
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = w[i] * (x[i] * scale);
}
}  // namespace

void rms_norm(const float* x, const float* weight, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) norm_row(x + r * n, weight, y + r * n, n, eps);
}

void add_rms_norm(float* residual, const float* delta, const float* weight, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* res = residual + r * n;
    const float* d = delta + r * n;
    for (int64_t i = 0; i < n; ++i) res[i] += d[i];
    norm_row(res, weight, y + r * n, n, eps);
  }
}

}  // namespace sy::cpu
