// Batch-invariant float32 matrix products: every element of y is one fixed sequence of
// operations that depends only on k, never on m, on the other rows of x, on how rows are
// split into calls or over threads. So a sequence's logits are the same bits whether it
// runs alone or in a full batch, in one prefill chunk or several, by prefill or by decode
// (issue 13: seeded failover continues token-exactly only if they are).
//
// The sequence: eight lanes; lane l accumulates x[i]·w[i] for i ≡ l (mod 8), i
// increasing, with fused multiply-adds from +0; a missing tail element counts as 0·0.
// Then y = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), plus y's old value when
// accumulating. The AVX2/FMA kernel and the portable one (std::fma) perform exactly these
// operations, so they give the same bits; the faster one is chosen at run time.
#pragma once

#include <cstdint>

namespace sy::cpu {

class ThreadPool;

// y[m, n] = x[m, k] · w[n, k]ᵀ (+ y if accumulate), row-major, spread over `pool`
// (weight rows split between threads).
void matmul_nt_invariant(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                         bool accumulate, ThreadPool& pool);

// The same on the calling thread with the portable kernel only (tests compare the two).
void matmul_nt_invariant_portable(const float* x, const float* w, float* y, int64_t m, int64_t n,
                                  int64_t k, bool accumulate);

// Whether matmul_nt_invariant uses the AVX2/FMA kernel on this machine.
bool invariant_gemm_has_avx2();

namespace detail {

// Rows [0, rows) of x times weight rows [0, cols) of w, rows <= kTileRows, cols <=
// kTileCols; y at y[r * ldy + c].
inline constexpr int kTileRows = 4;
inline constexpr int kTileCols = 3;
using InvariantTile = void (*)(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw,
                               int cols, int64_t k, float* y, int64_t ldy, bool accumulate);
void invariant_tile_portable(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw,
                             int cols, int64_t k, float* y, int64_t ldy, bool accumulate);
// Defined in invariant_gemm_avx2.cpp, compiled with -mavx2 -mfma on x86-64 only; call
// only where invariant_gemm_has_avx2().
void invariant_tile_avx2(const float* x, int64_t ldx, int rows, const float* w, int64_t ldw,
                         int cols, int64_t k, float* y, int64_t ldy, bool accumulate);

// The lane tree, shared by both kernels.
inline float sum_lanes(const float* l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

}  // namespace detail
}  // namespace sy::cpu
