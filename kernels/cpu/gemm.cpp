#include "kernels/cpu/gemm.h"

#include <cblas.h>

namespace sy::cpu {

void matmul_nt(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k, bool accumulate) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, x, static_cast<blasint>(k), w, static_cast<blasint>(k),
              accumulate ? 1.0f : 0.0f, y, static_cast<blasint>(n));
}

}  // namespace sy::cpu
