// The AVX2/FMA tile of invariant_gemm.h, in a file of its own compiled with -mavx2
// -mfma; the dispatcher calls it only where the processor has both.
#include <immintrin.h>

#include "kernels/cpu/invariant_gemm.h"

namespace sy::cpu::detail {
namespace {

// The last k % 8 elements, zero-filled: one masked load per operand.
inline __m256i tail_mask(int64_t left) {
  alignas(32) static const int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - left));
}

template <int R, int C>
void tile(const float* x, int64_t ldx, const float* w, int64_t ldw, int64_t k, float* y, int64_t ldy,
          bool accumulate) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 b[C];
    for (int c = 0; c < C; ++c) b[c] = _mm256_loadu_ps(w + c * ldw + i);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_loadu_ps(x + r * ldx + i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (i < k) {
    const __m256i mask = tail_mask(k - i);
    __m256 b[C];
    for (int c = 0; c < C; ++c) b[c] = _mm256_maskload_ps(w + c * ldw + i, mask);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_maskload_ps(x + r * ldx + i, mask);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      alignas(32) float lane[8];
      _mm256_store_ps(lane, acc[r][c]);
      const float s = sum_lanes(lane);
      float& out = y[r * ldy + c];
      out = accumulate ? out + s : s;
    }
}

template <int R>
void tile_rows(const float* x, int64_t ldx, const float* w, int64_t ldw, int cols, int64_t k, float* y,
               int64_t ldy, bool accumulate) {
  static_assert(kTileCols == 3);
  switch (cols) {
    case 3: return tile<R, 3>(x, ldx, w, ldw, k, y, ldy, accumulate);
    case 2: return tile<R, 2>(x, ldx, w, ldw, k, y, ldy, accumulate);
    default: return tile<R, 1>(x, ldx, w, ldw, k, y, ldy, accumulate);
  }
}

}  // namespace

void invariant_tile_avx2(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw, int cols,
                         int64_t k, float* y, int64_t ldy, bool accumulate) {
  static_assert(kTileRows == 4);
  switch (rows) {
    case 4: return tile_rows<4>(x, ldx, w, ldw, cols, k, y, ldy, accumulate);
    case 3: return tile_rows<3>(x, ldx, w, ldw, cols, k, y, ldy, accumulate);
    case 2: return tile_rows<2>(x, ldx, w, ldw, cols, k, y, ldy, accumulate);
    default: return tile_rows<1>(x, ldx, w, ldw, cols, k, y, ldy, accumulate);
  }
}

}  // namespace sy::cpu::detail
