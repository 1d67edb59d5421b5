// The per-head inner loops of paged_attention (attention.h), one table per SIMD level,
// each defined in a file compiled for that level (attention_avx2.cpp,
// attention_avx512.cpp; the scalar table in attention.cpp for any processor). The
// level is linear()'s (simd_level() in linear.h), so one switch lowers both.
#pragma once

#include <cstdint>

#include "common/half.h"

namespace sy::cpu::detail {

// A cached key or value as float32: itself, or an IEEE half widened exactly.
inline float widen(float x) { return x; }
inline float widen(uint16_t h) { return f16_to_f32(h); }

struct AttentionKernels {
  // s[j] = (q · k_j) · scale for the n keys k_j = k + j * d (contiguous rows of d
  // floats); returns max(running_max, max_j s[j]).
  float (*scores)(const float* q, const float* k, int64_t n, int d, float scale, float* s, float running_max);
  // acc[i] += Σ_j w[j] · v[j * d + i] for i < d, j < n, in order of j.
  void (*accumulate)(const float* w, const float* v, int64_t n, int d, float* acc);
  // s[j] = exp(s[j] − max) for j < n, in place (0 below exp's float32 range, NaN kept);
  // returns Σ_j s[j], summed in float64. The SIMD levels use one polynomial for every
  // element (a row's values depend on n only, never on where an element falls in a
  // vector); the scalar level calls std::exp.
  double (*exp_sum)(float* s, int64_t n, float max);
  // scores and accumulate over an IEEE half cache (KvLayer::k16/v16), each value widened
  // exactly, the float32 arithmetic the same as theirs.
  float (*scores_f16)(const float* q, const uint16_t* k, int64_t n, int d, float scale, float* s, float running_max);
  void (*accumulate_f16)(const float* w, const uint16_t* v, int64_t n, int d, float* acc);
  // dst[i] = src[i] as IEEE half, rounded to nearest even (NaN stays NaN), for i < n.
  void (*to_f16)(const float* src, uint16_t* dst, int64_t n);
};

const AttentionKernels* attention_kernels_scalar();
// Null where the build lacks that level's file.
const AttentionKernels* attention_kernels_avx2();
const AttentionKernels* attention_kernels_avx512();

}  // namespace sy::cpu::detail
