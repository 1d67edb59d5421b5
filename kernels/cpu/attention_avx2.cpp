// paged_attention's inner loops (attention_tile.h) for AVX2 + FMA, in a file of its own
// compiled with -mavx2 -mfma; attention.cpp calls them only where simd_level() allows
// AVX2.
#include <immintrin.h>

#include "kernels/cpu/attention_tile.h"

namespace sy::cpu::detail {
namespace {

struct AttentionLanes8 {
  using F = __m256;
  static constexpr int kWidth = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static float hsum(F v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
  }
};

const AttentionKernels kKernels = {attention_scores<AttentionLanes8>, attention_accumulate<AttentionLanes8>};

}  // namespace

const AttentionKernels* attention_kernels_avx2() { return &kKernels; }

}  // namespace sy::cpu::detail
