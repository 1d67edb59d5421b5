// paged_attention's inner loops (attention_kernels.h), written once over a vector-traits
// type V and included only by the per-level files (attention_avx2.cpp,
// attention_avx512.cpp), each compiled with its own target flags. Everything here has
// internal linkage, so each file keeps its own copy compiled for its own level.
//
// V: `F` (the register type), kWidth floats in it, zero(), load(p) (p float, or uint16_t
// IEEE half widened exactly), store(p, v), set1(x), fma(a, b, c) = a·b + c, add(a, b),
// hsum(v), to_f16(src, dst) (kWidth floats rounded to half, nearest even); for
// attention_exp_sum: sub, mul, max, round, pow2 and zero_below (vector_exp below) and
// `D`, a pair of float64 registers holding kWidth sums: dzero(), dadd(D, v) (v widened
// exactly, added lane by lane), dsum(D) (the lanes summed in a fixed order).
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/half.h"
#include "kernels/cpu/attention_kernels.h"

namespace sy::cpu::detail {
namespace {

// Two accumulators, as attention_scores() keeps for each of its four keys; the tail
// loops take a head dimension that is not a multiple of 2·kWidth.
template <class V, class T>
float attention_dot(const float* a, const T* b, int d) {
  constexpr int W = V::kWidth;
  typename V::F s0 = V::zero(), s1 = V::zero();
  int i = 0;
  for (; i + 2 * W <= d; i += 2 * W) {
    s0 = V::fma(V::load(a + i), V::load(b + i), s0);
    s1 = V::fma(V::load(a + i + W), V::load(b + i + W), s1);
  }
  for (; i + W <= d; i += W) s0 = V::fma(V::load(a + i), V::load(b + i), s0);
  float s = V::hsum(V::add(s0, s1));
  for (; i < d; ++i) s += a[i] * widen(b[i]);
  return s;
}

// Four keys at a time: their independent sums hide the FMA latency that one key's short
// reduction (d / kWidth FMAs) cannot. Each key's sum is the same as attention_dot()'s.
template <class V, class T>
float attention_scores(const float* q, const T* k, int64_t n, int d, float scale, float* s, float running_max) {
  constexpr int W = V::kWidth;
  int64_t j = 0;
  if (d % (2 * W) == 0) {
    for (; j + 4 <= n; j += 4) {
      const T* k0 = k + j * d;
      typename V::F a[4][2];
      for (int r = 0; r < 4; ++r) a[r][0] = a[r][1] = V::zero();
      for (int i = 0; i < d; i += 2 * W) {
        const typename V::F q0 = V::load(q + i), q1 = V::load(q + i + W);
        for (int r = 0; r < 4; ++r) {
          a[r][0] = V::fma(q0, V::load(k0 + r * d + i), a[r][0]);
          a[r][1] = V::fma(q1, V::load(k0 + r * d + i + W), a[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        s[j + r] = V::hsum(V::add(a[r][0], a[r][1])) * scale;
        running_max = std::max(running_max, s[j + r]);
      }
    }
  }
  for (; j < n; ++j) {
    s[j] = attention_dot<V, T>(q, k + j * d, d) * scale;
    running_max = std::max(running_max, s[j]);
  }
  return running_max;
}

// R registers of acc (R · kWidth floats) stay live across the keys.
template <class V, int R, class T>
void accumulate_chunk(const float* w, const T* v, int64_t n, int d, float* acc) {
  constexpr int W = V::kWidth;
  typename V::F a[R];
  for (int r = 0; r < R; ++r) a[r] = V::load(acc + W * r);
  for (int64_t j = 0; j < n; ++j) {
    const typename V::F wj = V::set1(w[j]);
    for (int r = 0; r < R; ++r) a[r] = V::fma(wj, V::load(v + j * d + W * r), a[r]);
  }
  for (int r = 0; r < R; ++r) V::store(acc + W * r, a[r]);
}

template <class V, class T>
void attention_accumulate(const float* w, const T* v, int64_t n, int d, float* acc) {
  constexpr int W = V::kWidth;
  int i = 0;
  for (; i + 8 * W <= d; i += 8 * W) accumulate_chunk<V, 8, T>(w, v + i, n, d, acc + i);
  for (; i + 4 * W <= d; i += 4 * W) accumulate_chunk<V, 4, T>(w, v + i, n, d, acc + i);
  for (; i + W <= d; i += W) accumulate_chunk<V, 1, T>(w, v + i, n, d, acc + i);
  for (; i < d; ++i)
    for (int64_t j = 0; j < n; ++j) acc[i] += w[j] * widen(v[j * d + i]);
}

template <class V>
void attention_to_f16(const float* src, uint16_t* dst, int64_t n) {
  constexpr int W = V::kWidth;
  int64_t i = 0;
  for (; i + W <= n; i += W) V::to_f16(src + i, dst + i);
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

// exp(x) for float32 lanes: x = n·ln 2 + r with n = round(x·log2 e) and r in
// [−ln 2/2, ln 2/2] (ln 2 split in two so r is exact), e^r by Cephes' degree-6 expf
// polynomial, times 2^n built in the exponent bits; lanes below −87.33 (where 2^n would
// leave the normal range) give 0, NaN lanes stay NaN. Within 2 ulp of expf.
template <class V>
typename V::F vector_exp(typename V::F x) {
  using F = typename V::F;
  const F xc = V::max(V::set1(-87.33654f), x);  // NaN in x stays (max returns its second operand)
  const F n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  F r = V::fma(n, V::set1(-0.693359375f), xc);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  F p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  const F y = V::add(V::fma(V::mul(p, r), r, r), V::set1(1.0f));
  return V::zero_below(V::mul(y, V::pow2(n)), x, -87.33654f);
}

template <class V>
double attention_exp_sum(float* s, int64_t n, float max) {
  constexpr int W = V::kWidth;
  const typename V::F m = V::set1(max);
  typename V::D sum = V::dzero();
  int64_t j = 0;
  for (; j + W <= n; j += W) {
    const typename V::F e = vector_exp<V>(V::sub(V::load(s + j), m));
    V::store(s + j, e);
    sum = V::dadd(sum, e);
  }
  if (j < n) {  // the tail through the same polynomial, padded with −inf (exp 0)
    float tail[W];
    for (int i = 0; i < W; ++i) tail[i] = j + i < n ? s[j + i] : -__builtin_inff();
    const typename V::F e = vector_exp<V>(V::sub(V::load(tail), m));
    V::store(tail, e);
    for (int64_t i = 0; j + i < n; ++i) s[j + i] = tail[i];
    sum = V::dadd(sum, e);
  }
  return V::dsum(sum);
}

// The table of one level, for its vector-traits type V.
template <class V>
constexpr AttentionKernels attention_kernel_table() {
  return {attention_scores<V, float>,    attention_accumulate<V, float>,    attention_exp_sum<V>,
          attention_scores<V, uint16_t>, attention_accumulate<V, uint16_t>, attention_to_f16<V>};
}

}  // namespace
}  // namespace sy::cpu::detail
