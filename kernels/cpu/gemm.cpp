#include "kernels/cpu/gemm.h"

#include <cblas.h>

namespace sy::cpu {

namespace {
constexpr int64_t kMaxGemvRows = 4;
}  // namespace

void matmul_nt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (m <= kMaxGemvRows) {
    // A few rows (decode steps): sgemv streams the weights per row; sgemm would first
    // pack them into panels, which at these sizes costs more than the products
    // (measured with switchyard-kernels-bench: 1×4096×1024 takes 1.3 ms as sgemv, 6 ms
    // as sgemm). y is [m, n] row-major, so row i of y is a contiguous vector.
    for (int64_t i = 0; i < m; ++i)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, w,
                  static_cast<blasint>(k), x + i * k, 1, accumulate ? 1.0f : 0.0f, y + i * n, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, x, static_cast<blasint>(k), w, static_cast<blasint>(k),
              accumulate ? 1.0f : 0.0f, y, static_cast<blasint>(n));
}

}  // namespace sy::cpu
