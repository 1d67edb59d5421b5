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
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
};

const AttentionKernels kKernels = {attention_scores<AttentionLanes16>, attention_accumulate<AttentionLanes16>};

}  // namespace

const AttentionKernels* attention_kernels_avx512() { return &kKernels; }

}  // namespace sy::cpu::detail
