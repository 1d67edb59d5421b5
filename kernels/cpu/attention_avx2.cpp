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
  static F load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void to_f16(const float* src, uint16_t* dst) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
  }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static float hsum(F v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
  }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F round(F v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [−126, 127].
  static F pow2(F n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static F zero_below(F v, F x, float lo) { return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_LT_OQ), v); }
  struct D {
    __m256d lo, hi;
  };
  static D dzero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static D dadd(D d, F v) {
    return {_mm256_add_pd(d.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v))),
            _mm256_add_pd(d.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)))};
  }
  static double dsum(D d) {
    const __m256d s = _mm256_add_pd(d.lo, d.hi);
    const __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
  }
};

constexpr AttentionKernels kKernels = attention_kernel_table<AttentionLanes8>();

}  // namespace

const AttentionKernels* attention_kernels_avx2() { return &kKernels; }

}  // namespace sy::cpu::detail
