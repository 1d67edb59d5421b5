// paged_attention's inner loops (attention_tile.h) for AVX-512F, in a file of its own
// compiled for that level; attention.cpp calls them only where simd_level() allows
// AVX-512.
#include <immintrin.h>

#include "kernels/cpu/attention_tile.h"

namespace sy::cpu::detail {
namespace {

struct AttentionLanes16 {
  using F = __m512;
  static constexpr int kWidth = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void to_f16(const float* src, uint16_t* dst) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtps_ph(_mm512_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
  }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F round(F v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [−126, 127].
  static F pow2(F n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static F zero_below(F v, F x, float lo) {
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_LT_OQ), _mm512_setzero_ps());
  }
  struct D {
    __m512d lo, hi;
  };
  static D dzero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
  static D dadd(D d, F v) {
    return {_mm512_add_pd(d.lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v))),
            _mm512_add_pd(d.hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))))};
  }
  static double dsum(D d) { return _mm512_reduce_add_pd(_mm512_add_pd(d.lo, d.hi)); }
};

constexpr AttentionKernels kKernels = attention_kernel_table<AttentionLanes16>();

}  // namespace

const AttentionKernels* attention_kernels_avx512() { return &kKernels; }

}  // namespace sy::cpu::detail
