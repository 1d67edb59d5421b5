#include "kernels/cpu/invariant_gemm.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace detail {

void invariant_tile_portable(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw,
                             int cols, int64_t k, float* y, int64_t ldy, bool accumulate) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const float* a = x + r * ldx;
      const float* b = w + c * ldw;
      float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t i0 = 0; i0 < k; i0 += 8)
        for (int l = 0; l < 8; ++l) {
          const int64_t i = i0 + l;
          lane[l] = std::fma(i < k ? a[i] : 0.0f, i < k ? b[i] : 0.0f, lane[l]);
        }
      const float s = sum_lanes(lane);
      float& out = y[r * ldy + c];
      out = accumulate ? out + s : s;
    }
}

}  // namespace detail

namespace {

bool detect_avx2() {
#if defined(SY_INVARIANT_GEMM_AVX2)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// Tiles of one block of weight rows [n0, n1) against every row of x. A block's weights
// (at most ~256 KiB) stay in the core's L2 while the rows of x stream past them.
void run_block(detail::InvariantTile tile, const float* x, const float* w, float* y, int64_t m, int64_t n,
               int64_t k, int64_t n0, int64_t n1, bool accumulate) {
  for (int64_t r = 0; r < m; r += detail::kTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(detail::kTileRows, m - r));
    for (int64_t c = n0; c < n1; c += detail::kTileCols) {
      const int cols = static_cast<int>(std::min<int64_t>(detail::kTileCols, n1 - c));
      tile(x + r * k, k, rows, w + c * k, k, cols, k, y + r * n + c, n, accumulate);
    }
  }
}

}  // namespace

bool invariant_gemm_has_avx2() {
  static const bool has = detect_avx2();
  return has;
}

void matmul_nt_invariant(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                         bool accumulate, ThreadPool& pool) {
  if (m <= 0 || n <= 0) return;
#if defined(SY_INVARIANT_GEMM_AVX2)
  const detail::InvariantTile tile =
      invariant_gemm_has_avx2() ? detail::invariant_tile_avx2 : detail::invariant_tile_portable;
#else
  const detail::InvariantTile tile = detail::invariant_tile_portable;
#endif
  // Blocks of weight rows: about 256 KiB of weights each, a multiple of the tile width,
  // and at least four blocks a thread so that uneven cores even out.
  const int64_t cols = detail::kTileCols;
  int64_t block = std::max<int64_t>(cols, (int64_t{64} * 1024 / std::max<int64_t>(k, 1)) / cols * cols);
  const int64_t want_blocks = static_cast<int64_t>(pool.size()) * 4;
  if ((n + block - 1) / block < want_blocks)
    block = std::max<int64_t>(cols, ((n + want_blocks - 1) / want_blocks + cols - 1) / cols * cols);
  const int64_t blocks = (n + block - 1) / block;
  pool.parallel_for(blocks, [&](int64_t b) {
    run_block(tile, x, w, y, m, n, k, b * block, std::min(n, (b + 1) * block), accumulate);
  });
}

void matmul_nt_invariant_portable(const float* x, const float* w, float* y, int64_t m, int64_t n,
                                  int64_t k, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  run_block(detail::invariant_tile_portable, x, w, y, m, n, k, 0, n, accumulate);
}

}  // namespace sy::cpu
