// The SIMD tiles of linear() (linear.h), written once over a vector-traits type and
// included only by the per-level files (linear_avx2.cpp, linear_avx512*.cpp), each
// compiled with its own target flags. Everything here has internal linkage, so each file
// keeps its own copy compiled for its own level: a shared inline template would let the
// linker keep one level's code for all.
//
// A tile holds R rows of x and C weight rows; acc[r][c] runs the same operations over k
// whatever R and C are, so y does not depend on how rows are grouped (batch invariance).
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/dtype.h"
#include "kernels/cpu/linear_kernels.h"

namespace sy::cpu::detail {
namespace {

// Weight element types of the float kernels: the bytes of one element.
struct WF32 {
  static constexpr int kBytes = 4;
};
struct WF16 {
  static constexpr int kBytes = 2;
};
struct WBF16 {
  static constexpr int kBytes = 2;
};

// Calls fn.template operator()<R, L>(j) over column groups of C (the last group
// narrower), for R rows.
template <int R, int L, class Fn>
inline void last_cols(int64_t j, int64_t left, Fn& fn) {
  if constexpr (L >= 1) {
    if (left == L) return fn.template operator()<R, L>(j);
    last_cols<R, L - 1>(j, left, fn);
  }
}

template <int R, int C, class Fn>
inline void col_groups(int64_t cols, Fn& fn) {
  int64_t j = 0;
  for (; j + C <= cols; j += C) fn.template operator()<R, C>(j);
  if (j < cols) last_cols<R, C - 1>(j, cols - j, fn);
}

template <int C, class Fn>
inline void tiles(int rows, int64_t cols, Fn& fn) {
  switch (rows) {
    case 4: return col_groups<4, C>(cols, fn);
    case 3: return col_groups<3, C>(cols, fn);
    case 2: return col_groups<2, C>(cols, fn);
    default: return col_groups<1, C>(cols, fn);
  }
}

// The next tile's weight rows, j1 .. j1 + min(C, cols − j1) − 1 of the kernel call's
// columns, loaded into L1 a little at a time while this tile runs: at(offset, bytes)
// touches every cache line of bytes [offset, offset + bytes) of each row. A decode step
// reads rows of one to a few KB once, in tiles of two to four rows at a time: too short
// for the hardware prefetcher to ramp up on before the tile moves on (measured on the
// GPU host's Xeon, one thread: q8_0 products read their weights at 5.7-7.5 GB/s against
// 10.5 GB/s for a plain read; docs/PERFORMANCE.md). kOn false compiles it out
// (LinearOptions::prefetch).
template <bool kOn, int C>
struct NextRows {
  const uint8_t* first;
  size_t ws;
  int n;
  NextRows(const uint8_t* w, size_t row_stride, int64_t j1, int64_t cols)
      : first(w + static_cast<size_t>(j1) * row_stride), ws(row_stride),
        n(cols > j1 ? static_cast<int>(cols - j1 < C ? cols - j1 : C) : 0) {}
  void at(size_t offset, size_t bytes) const {
    if constexpr (kOn)
      for (int h = 0; h < n; ++h)
        for (size_t o = 0; o < bytes; o += 64)
          _mm_prefetch(reinterpret_cast<const char*>(first + h * ws + offset + o), _MM_HINT_T0);
  }
};

// Float weights (f32, f16, bf16) widened to float32 (exactly), multiplied by FMA into
// eight lanes. The last k % 8 elements go through zero-padded copies: one more step, its
// missing elements 0 · 0, as linear.h's sequence says.
template <class V, class WT, int kCols, bool kPf>
void float_rows(const float* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
                int64_t ldy) {
  using F = typename V::F;
  constexpr int kL = V::kLanes;
  auto tile = [&]<int R, int C>(int64_t j) {
    const uint8_t* wj = w + static_cast<size_t>(j) * ws;
    const NextRows<kPf, C> next(w, ws, j + C, cols);
    F acc[R][C];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] = V::zero();
    int64_t i = 0;
    for (; i + kL <= k; i += kL) {
      if ((i * WT::kBytes) % 64 == 0) next.at(static_cast<size_t>(i * WT::kBytes), 64);
      F b[C];
      for (int c = 0; c < C; ++c) b[c] = V::load(WT{}, wj + c * ws + i * WT::kBytes);
      for (int r = 0; r < R; ++r) {
        const F a = V::load(x + r * ldx + i);
        for (int c = 0; c < C; ++c) acc[r][c] = V::fma(a, b[c], acc[r][c]);
      }
    }
    if (i < k) {
      const size_t left = static_cast<size_t>(k - i);
      alignas(64) uint8_t wb[C][kL * 4] = {};
      alignas(64) float xb[kL] = {};
      F b[C];
      for (int c = 0; c < C; ++c) {
        std::memcpy(wb[c], wj + c * ws + i * WT::kBytes, left * WT::kBytes);
        b[c] = V::load(WT{}, wb[c]);
      }
      for (int r = 0; r < R; ++r) {
        std::memcpy(xb, x + r * ldx + i, left * sizeof(float));
        const F a = V::load(xb);
        for (int c = 0; c < C; ++c) acc[r][c] = V::fma(a, b[c], acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) y[r * ldy + j + c] = V::hsum(acc[r][c]);
  };
  tiles<kCols>(rows, cols, tile);
}

// The lanes' sum in linear.h's fixed tree (invariant_gemm's).
inline float hsum8(__m256 v) {
  alignas(32) float l[8];
  _mm256_store_ps(l, v);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// Weight blocks of 32 values as 32 int8 quants and a float scale.
struct WQ8_0 {
  using Block = BlockQ8_0;
  static __m256i quants(const Block& b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)); }
};
// Q4_0: byte j holds element j (low nibble) and j + 16 (high); value q - 8.
struct WQ4_0 {
  using Block = BlockQ4_0;
  static __m256i quants(const Block& b) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i lo = _mm_and_si128(bytes, _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
  }
};

// 32-value weight blocks (WB: Q8_0, Q4_0) against x quantized per block (XBlockQ8): per
// block, Dot::dot gives eight int32 partial sums of four products each (exact),
// converted to float and scaled by x's and the weight's block scales into eight lanes.
template <class Dot, class WB, int C, bool kPf>
void q_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
            int64_t ldy) {
  const int64_t nb = k / kQ8_0BlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const uint8_t* wj = w + static_cast<size_t>(j) * ws;
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    __m256 acc[R][CC];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      next.at(static_cast<size_t>(b) * sizeof(typename WB::Block), 1);
      __m256i wq[CC];
      float wd[CC];
      for (int c = 0; c < CC; ++c) {
        const auto* blk = reinterpret_cast<const typename WB::Block*>(wj + c * ws) + b;
        wq[c] = WB::quants(*blk);
        wd[c] = _cvtsh_ss(blk->d);
      }
      for (int r = 0; r < R; ++r) {
        const XBlockQ8& xb = x[r * ldx + b];
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
        for (int c = 0; c < CC; ++c)
          acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d * wd[c]), _mm256_cvtepi32_ps(Dot::dot(wq[c], xq)), acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) y[r * ldy + j + c] = hsum8(acc[r][c]);
  };
  tiles<C>(rows, cols, tile);
}

// int8 · int8 over 32 bytes into eight int32 lanes (lane i: bytes 4i..4i+3) with AVX2:
// maddubs takes unsigned × signed, so |w| times x with w's sign; pairs of its int16
// sums (at most 2 · 128 · 127, no saturation) then add into int32.
struct DotAvx2 {
  static __m256i dot(__m256i w, __m256i x) { return udot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
  // Unsigned w (at most 128 with a signed x of magnitude <= 127: no saturation).
  static __m256i udot(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
  }
};

// d·sc and dmin·mn of a Q4_K/Q5_K block's 8 sub-blocks: the 6-bit scales and minimums
// unpacked four at a time in 32-bit words (the layout of unpack_q4_k_scales), widened
// and scaled eight at a time.
template <class Blk>
inline void k_scales(const Blk& b, float* dsc, float* dmn) {
  uint32_t w[3];
  std::memcpy(w, b.scales, 12);
  const uint32_t sc_lo = w[0] & 0x3f3f3f3fu, mn_lo = w[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (w[2] & 0x0f0f0f0fu) | (((w[0] >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4);
  const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo))));
  const __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_set_epi32(0, 0, static_cast<int>(mn_hi), static_cast<int>(mn_lo))));
  _mm256_store_ps(dsc, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.d)), sc));
  _mm256_store_ps(dmn, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(b.dmin)), mn));
}

// Q4_K and Q5_K weights (super-blocks of 256: 8 sub-blocks of 32, value d·sc·q −
// dmin·mn, q in 0..15, Q5_K's with a fifth bit from bit s of qh[l] for sub-block s)
// against x quantized per block of 32: per sub-block, lane l adds
// fma(d_x·d·sc, Σ of the four products q·q_x 4l..4l+3), and a separate sum adds
// fma(d_x·dmin·mn, Σ q_x); y = (the lanes' tree) − that sum. Sub-blocks in order.
template <class Dot, class Blk, int C, bool kPf>
void k4_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
               int64_t ldy) {
  const int64_t nsb = k / kQKBlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const uint8_t* wj = w + static_cast<size_t>(j) * ws;
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    __m256 acc[R][CC];
    float mins[R][CC];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) {
        acc[r][c] = _mm256_setzero_ps();
        mins[r][c] = 0.0f;
      }
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t s = 0; s < nsb; ++s) {
      next.at(static_cast<size_t>(s) * sizeof(Blk), sizeof(Blk));
      const Blk* blk[CC];
      alignas(32) float dsc[CC][8], dmn[CC][8];  // d·sc and dmin·mn per sub-block
      for (int c = 0; c < CC; ++c) {
        blk[c] = reinterpret_cast<const Blk*>(wj + c * ws) + s;
        k_scales(*blk[c], dsc[c], dmn[c]);
      }
      for (int pair = 0; pair < 4; ++pair) {
        __m256i lo[CC], hi[CC];
        for (int c = 0; c < CC; ++c) {
          const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[c]->qs + 32 * pair));
          lo[c] = _mm256_and_si256(q, low4);
          hi[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
          if constexpr (std::is_same_v<Blk, BlockQ5_K>) {
            const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[c]->qh));
            const __m256i one = _mm256_set1_epi8(1);
            const __m256i b0 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * pair)), one);
            const __m256i b1 = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * pair + 1)), one);
            lo[c] = _mm256_or_si256(lo[c], _mm256_slli_epi16(b0, 4));
            hi[c] = _mm256_or_si256(hi[c], _mm256_slli_epi16(b1, 4));
          }
        }
        for (int r = 0; r < R; ++r) {
          const XBlockQ8& x0 = x[r * ldx + s * 8 + 2 * pair];
          const XBlockQ8& x1 = x[r * ldx + s * 8 + 2 * pair + 1];
          const __m256i q0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0.qs));
          const __m256i q1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x1.qs));
          for (int c = 0; c < CC; ++c) {
            const int s0 = 2 * pair, s1 = s0 + 1;
            acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(x0.d * dsc[c][s0]), _mm256_cvtepi32_ps(Dot::udot(lo[c], q0)), acc[r][c]);
            mins[r][c] = std::fma(dmn[c][s0], x0.dsum, mins[r][c]);
            acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(x1.d * dsc[c][s1]), _mm256_cvtepi32_ps(Dot::udot(hi[c], q1)), acc[r][c]);
            mins[r][c] = std::fma(dmn[c][s1], x1.dsum, mins[r][c]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) y[r * ldy + j + c] = hsum8(acc[r][c]) - mins[r][c];
  };
  tiles<C>(rows, cols, tile);
}

// Q6_K weights (super-blocks of 256 in two halves of 128; value d·sc·(q − 32), q of 6
// bits, a signed 8-bit scale per 16 values) against x quantized per block of 32. Group
// k (0..3) of a half is 32 consecutive values, one x block: value l of it has its low
// four bits in ql[l] (k = 0), ql[32 + l] (k = 1) or their high nibbles (k = 2, 3), and
// bits 2k, 2k+1 of qh[l] on top. Per group, lane l adds fma(d_x·(d·sc), Σ of four
// (q − 32)·q_x), sc that of values 0-15 for lanes 0-3 and of 16-31 for lanes 4-7.
template <class Dot, int C, bool kPf>
void q6_k_rows(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k, float* y,
               int64_t ldy) {
  const int64_t nsb = k / kQKBlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const uint8_t* wj = w + static_cast<size_t>(j) * ws;
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    __m256 acc[R][CC];
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) acc[r][c] = _mm256_setzero_ps();
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
    for (int64_t s = 0; s < nsb; ++s) {
      next.at(static_cast<size_t>(s) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
      const BlockQ6_K* blk[CC];
      float d[CC];
      for (int c = 0; c < CC; ++c) {
        blk[c] = reinterpret_cast<const BlockQ6_K*>(wj + c * ws) + s;
        d[c] = _cvtsh_ss(blk[c]->d);
      }
      for (int half = 0; half < 2; ++half) {
        // Per weight row: its quant bytes of this half, and d·sc of its 8 sub-blocks.
        __m256i lq[CC][2], hq[CC];
        __m256 dsc[CC];
        for (int c = 0; c < CC; ++c) {
          const uint8_t* ql = blk[c]->ql + 64 * half;
          lq[c][0] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
          lq[c][1] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
          hq[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[c]->qh + 32 * half));
          const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk[c]->scales + 8 * half));
          dsc[c] = _mm256_mul_ps(_mm256_set1_ps(d[c]), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
        }
        for (int g = 0; g < 4; ++g) {
          __m256i wq[CC];
          __m256 gsc[CC];  // lanes 0-3: d·sc of values 0-15, lanes 4-7: of 16-31
          const __m256i pick = _mm256_set_epi32(2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g, 2 * g, 2 * g, 2 * g);
          for (int c = 0; c < CC; ++c) {
            const __m256i l = lq[c][g % 2];
            const __m256i lo = _mm256_and_si256(g < 2 ? l : _mm256_srli_epi16(l, 4), low4);
            const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(hq[c], _mm_cvtsi32_si128(2 * g)), two);
            wq[c] = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), off);
            gsc[c] = _mm256_permutevar8x32_ps(dsc[c], pick);
          }
          for (int r = 0; r < R; ++r) {
            const XBlockQ8& xb = x[r * ldx + s * 8 + half * 4 + g];
            const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
            const __m256 xd = _mm256_set1_ps(xb.d);
            for (int c = 0; c < CC; ++c)
              acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(xd, gsc[c]), _mm256_cvtepi32_ps(Dot::dot(wq[c], xq)), acc[r][c]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < CC; ++c) y[r * ldy + j + c] = hsum8(acc[r][c]);
  };
  tiles<C>(rows, cols, tile);
}

// The float kernels' vector type: eight lanes, whatever the level, so that every level
// performs the same operations (linear.h).
struct Lanes8 {
  using F = __m256;
  static constexpr int kLanes = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F load(WF32, const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static F load(WF16, const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // bf16 is the top half of a float32: widen to 32 bits and shift.
  static F load(WBF16, const uint8_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static float hsum(F v) { return hsum8(v); }
};


}  // namespace
}  // namespace sy::cpu::detail
