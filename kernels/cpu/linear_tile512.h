// The int8 tiles of linear() on 512-bit registers with VNNI, included only by
// linear_avx512_vnni.cpp (compiled for that level). A vector holds two weight columns:
// lanes 0-7 are column c's eight lanes of linear.h's sequence, lanes 8-15 column c + 1's,
// and every lane runs exactly the operations of linear_tile.h's eight-lane kernels, so y
// has the same bits as on every other level; what changes is that one instruction serves
// two columns and that signed × signed block sums take one vpdpbusd instead of two sign
// operations and one: x's bytes go in offset by 128 (unsigned) and the accumulator starts
// at −128 · Σ w of each group of four, so the exact sum comes out.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/linear_tile.h"

namespace sy::cpu::detail {
namespace {

inline __m512i pair_i(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m512 pair_ps(__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }
inline __m512 pair_ps(float lo, float hi) { return pair_ps(_mm256_set1_ps(lo), _mm256_set1_ps(hi)); }
inline __m512i both_halves(const int8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// x's 32 quants in both halves, offset by 128 to unsigned bytes.
inline __m512i x_unsigned(const XBlockQ8& xb) {
  return _mm512_xor_si512(both_halves(xb.qs), _mm512_set1_epi8(static_cast<char>(0x80)));
}
// −128 · (the sum of each group of four signed weight bytes): the start that makes
// vpdpbusd over x + 128 give Σ x · w.
inline __m512i offset_start(__m512i w) {
  return _mm512_sub_epi32(_mm512_setzero_si512(),
                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), w));
}

// tiles() (linear_tile.h) for up to eight rows of x.
template <int C, class Fn>
inline void tiles8(int rows, int64_t cols, Fn& fn) {
  switch (rows) {
    case 8: return col_groups<8, C>(cols, fn);
    case 7: return col_groups<7, C>(cols, fn);
    case 6: return col_groups<6, C>(cols, fn);
    case 5: return col_groups<5, C>(cols, fn);
    default: return tiles<C>(rows, cols, fn);
  }
}

// The tile's 2P weight rows: column h of the tile, or its last column again where CC is
// odd (computed, not stored).
template <int CC>
struct PairRows {
  static constexpr int P = (CC + 1) / 2;
  const uint8_t* row[2 * P];
  PairRows(const uint8_t* w, size_t ws, int64_t j) {
    for (int h = 0; h < 2 * P; ++h) row[h] = w + static_cast<size_t>(j + std::min(h, CC - 1)) * ws;
  }
};

// y of the tile's CC columns: each half's lanes summed in linear.h's tree, less the
// column's minimum term (lane h of minus[r]) where there is one.
template <int R, int P>
inline void zero(__m512 (&acc)[R][P]) {
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
}

template <int R, int CC>
inline void store_pairs(const __m512 (&acc)[R][(CC + 1) / 2], const __m128* minus, float* y, int64_t ldy,
                        int64_t j) {
  for (int r = 0; r < R; ++r) {
    alignas(16) float m[4] = {};
    if (minus) _mm_store_ps(m, minus[r]);
    for (int h = 0; h < CC; ++h) {
      const __m512 a = acc[r][h / 2];
      const float s = hsum8(h % 2 ? _mm512_extractf32x8_ps(a, 1) : _mm512_castps512_ps256(a));
      y[r * ldy + j + h] = minus ? s - m[h] : s;
    }
  }
}

// Q8_0 and Q4_0 weights (signed quants): q_rows's sequence.
template <class WB, int C, bool kPf>
void q_rows512(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k,
               float* y, int64_t ldy) {
  const int64_t nb = k / kQ8_0BlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const PairRows<CC> pr(w, ws, j);
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    constexpr int P = PairRows<CC>::P;
    __m512 acc[R][P];
    zero(acc);
    for (int64_t b = 0; b < nb; ++b) {
      next.at(static_cast<size_t>(b) * sizeof(typename WB::Block), 1);
      __m512i wq[P], start[P];
      __m512 wd[P];
      for (int p = 0; p < P; ++p) {
        const auto* b0 = reinterpret_cast<const typename WB::Block*>(pr.row[2 * p]) + b;
        const auto* b1 = reinterpret_cast<const typename WB::Block*>(pr.row[2 * p + 1]) + b;
        wq[p] = pair_i(WB::quants(*b0), WB::quants(*b1));
        wd[p] = pair_ps(_cvtsh_ss(b0->d), _cvtsh_ss(b1->d));
        start[p] = offset_start(wq[p]);
      }
      for (int r = 0; r < R; ++r) {
        const XBlockQ8& xb = x[r * ldx + b];
        const __m512i xu = x_unsigned(xb);
        const __m512 xd = _mm512_set1_ps(xb.d);
        for (int p = 0; p < P; ++p)
          acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(xd, wd[p]), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start[p], xu, wq[p])),
                                      acc[r][p]);
      }
    }
    store_pairs<R, CC>(acc, nullptr, y, ldy, j);
  };
  tiles8<C>(rows, cols, tile);
}

// Q4_K and Q5_K weights (unsigned quants against signed x): k4_rows's sequence, the
// minimum terms of the tile's (at most four) columns in the lanes of one 128-bit vector.
template <class Blk, int C, bool kPf>
void k4_rows512(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k,
                float* y, int64_t ldy) {
  static_assert(C <= 4, "the minimum terms of a tile's columns fill one 128-bit vector");
  const int64_t nsb = k / kQKBlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const PairRows<CC> pr(w, ws, j);
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    constexpr int P = PairRows<CC>::P;
    __m512 acc[R][P];
    __m128 mins[R];
    zero(acc);
    for (int r = 0; r < R; ++r) mins[r] = _mm_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    for (int64_t s = 0; s < nsb; ++s) {
      next.at(static_cast<size_t>(s) * sizeof(Blk), sizeof(Blk));
      const Blk* blk[2 * P];
      alignas(32) float dsc[2 * P][8], dmn[4][8] = {};
      for (int h = 0; h < 2 * P; ++h) {
        blk[h] = reinterpret_cast<const Blk*>(pr.row[h]) + s;
        k_scales(*blk[h], dsc[h], dmn[h]);
      }
      for (int pair = 0; pair < 4; ++pair) {
        const int s0 = 2 * pair, s1 = s0 + 1;
        const __m128 mn0 = _mm_set_ps(dmn[3][s0], dmn[2][s0], dmn[1][s0], dmn[0][s0]);
        const __m128 mn1 = _mm_set_ps(dmn[3][s1], dmn[2][s1], dmn[1][s1], dmn[0][s1]);
        __m512i lo[P], hi[P];
        __m512 sc0[P], sc1[P];
        for (int p = 0; p < P; ++p) {
          const __m512i q = pair_i(load32(blk[2 * p]->qs + 32 * pair), load32(blk[2 * p + 1]->qs + 32 * pair));
          lo[p] = _mm512_and_si512(q, low4);
          hi[p] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
          if constexpr (std::is_same_v<Blk, BlockQ5_K>) {
            const __m512i qh = pair_i(load32(blk[2 * p]->qh), load32(blk[2 * p + 1]->qh));
            const __m512i one = _mm512_set1_epi8(1);
            const __m512i b0 = _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(s0)), one);
            const __m512i b1 = _mm512_and_si512(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(s1)), one);
            lo[p] = _mm512_or_si512(lo[p], _mm512_slli_epi16(b0, 4));
            hi[p] = _mm512_or_si512(hi[p], _mm512_slli_epi16(b1, 4));
          }
          sc0[p] = pair_ps(dsc[2 * p][s0], dsc[2 * p + 1][s0]);
          sc1[p] = pair_ps(dsc[2 * p][s1], dsc[2 * p + 1][s1]);
        }
        for (int r = 0; r < R; ++r) {
          const XBlockQ8& x0 = x[r * ldx + s * 8 + s0];
          const XBlockQ8& x1 = x[r * ldx + s * 8 + s1];
          const __m512i q0 = both_halves(x0.qs), q1 = both_halves(x1.qs);
          const __m512 d0 = _mm512_set1_ps(x0.d), d1 = _mm512_set1_ps(x1.d);
          for (int p = 0; p < P; ++p) {
            acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(d0, sc0[p]), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, lo[p], q0)),
                                        acc[r][p]);
            acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(d1, sc1[p]), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(zero, hi[p], q1)),
                                        acc[r][p]);
          }
          mins[r] = _mm_fmadd_ps(mn0, _mm_set1_ps(x0.dsum), mins[r]);
          mins[r] = _mm_fmadd_ps(mn1, _mm_set1_ps(x1.dsum), mins[r]);
        }
      }
    }
    store_pairs<R, CC>(acc, mins, y, ldy, j);
  };
  tiles8<C>(rows, cols, tile);
}

// Q6_K weights (q − 32, signed): q6_k_rows's sequence, each column's quants decoded as
// there and paired.
template <int C, bool kPf>
void q6_k_rows512(const XBlockQ8* x, int64_t ldx, int rows, const uint8_t* w, size_t ws, int64_t cols, int64_t k,
                  float* y, int64_t ldy) {
  if (rows > kLinearRows) {  // the decoded quants fill the registers that more rows would need
    q6_k_rows512<C, kPf>(x, ldx, kLinearRows, w, ws, cols, k, y, ldy);
    return q6_k_rows512<C, kPf>(x + kLinearRows * ldx, ldx, rows - kLinearRows, w, ws, cols, k, y + kLinearRows * ldy, ldy);
  }
  const int64_t nsb = k / kQKBlockSize;
  auto tile = [&]<int R, int CC>(int64_t j) {
    const PairRows<CC> pr(w, ws, j);
    const NextRows<kPf, CC> next(w, ws, j + CC, cols);
    constexpr int P = PairRows<CC>::P;
    __m512 acc[R][P];
    zero(acc);
    const __m256i low4 = _mm256_set1_epi8(0x0f), two = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
    for (int64_t s = 0; s < nsb; ++s) {
      next.at(static_cast<size_t>(s) * sizeof(BlockQ6_K), sizeof(BlockQ6_K));
      const BlockQ6_K* blk[2 * P];
      for (int h = 0; h < 2 * P; ++h) blk[h] = reinterpret_cast<const BlockQ6_K*>(pr.row[h]) + s;
      for (int half = 0; half < 2; ++half) {
        __m256i lq[2 * P][2], hq[2 * P];
        __m256 dsc[2 * P];
        for (int h = 0; h < 2 * P; ++h) {
          const uint8_t* ql = blk[h]->ql + 64 * half;
          lq[h][0] = load32(ql);
          lq[h][1] = load32(ql + 32);
          hq[h] = load32(blk[h]->qh + 32 * half);
          const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk[h]->scales + 8 * half));
          dsc[h] = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(blk[h]->d)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
        }
        for (int g = 0; g < 4; ++g) {
          const __m256i pick = _mm256_set_epi32(2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g + 1, 2 * g, 2 * g, 2 * g, 2 * g);
          __m512i wq[P], start[P];
          __m512 gsc[P];
          for (int p = 0; p < P; ++p) {
            __m256i q[2];
            __m256 sc[2];
            for (int e = 0; e < 2; ++e) {
              const int h = 2 * p + e;
              const __m256i l = lq[h][g % 2];
              const __m256i lo = _mm256_and_si256(g < 2 ? l : _mm256_srli_epi16(l, 4), low4);
              const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(hq[h], _mm_cvtsi32_si128(2 * g)), two);
              q[e] = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hb, 4)), off);
              sc[e] = _mm256_permutevar8x32_ps(dsc[h], pick);
            }
            wq[p] = pair_i(q[0], q[1]);
            gsc[p] = pair_ps(sc[0], sc[1]);
            start[p] = offset_start(wq[p]);
          }
          for (int r = 0; r < R; ++r) {
            const XBlockQ8& xb = x[r * ldx + s * 8 + half * 4 + g];
            const __m512i xu = x_unsigned(xb);
            const __m512 xd = _mm512_set1_ps(xb.d);
            for (int p = 0; p < P; ++p)
              acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(xd, gsc[p]),
                                          _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(start[p], xu, wq[p])), acc[r][p]);
          }
        }
      }
    }
    store_pairs<R, CC>(acc, nullptr, y, ldy, j);
  };
  tiles<C>(rows, cols, tile);
}

}  // namespace
}  // namespace sy::cpu::detail
