// paged_attention's inner loops (attention_kernels.h) for AVX2 + FMA, in a file of its
// own compiled with -mavx2 -mfma; attention.cpp calls them only where simd_level()
// allows AVX2.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/attention_kernels.h"

namespace sy::cpu::detail {
namespace {

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// Two accumulators, as scores() keeps for each of its four keys; the tail loop takes a
// head dimension that is not a multiple of 16.
inline float dot(const float* a, const float* b, int d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= d; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

// Four keys at a time: their independent sums hide the FMA latency that one key's
// short reduction (d / 8 FMAs) cannot. Each key's sum is the same as dot()'s.
float scores(const float* q, const float* k, int64_t n, int d, float scale, float* s, float running_max) {
  int64_t j = 0;
  if (d % 16 == 0) {
    for (; j + 4 <= n; j += 4) {
      const float* k0 = k + j * d;
      __m256 a[4][2];
      for (int r = 0; r < 4; ++r) a[r][0] = a[r][1] = _mm256_setzero_ps();
      for (int i = 0; i < d; i += 16) {
        const __m256 q0 = _mm256_loadu_ps(q + i), q1 = _mm256_loadu_ps(q + i + 8);
        for (int r = 0; r < 4; ++r) {
          a[r][0] = _mm256_fmadd_ps(q0, _mm256_loadu_ps(k0 + r * d + i), a[r][0]);
          a[r][1] = _mm256_fmadd_ps(q1, _mm256_loadu_ps(k0 + r * d + i + 8), a[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        s[j + r] = hsum(_mm256_add_ps(a[r][0], a[r][1])) * scale;
        running_max = std::max(running_max, s[j + r]);
      }
    }
  }
  for (; j < n; ++j) {
    s[j] = dot(q, k + j * d, d) * scale;
    running_max = std::max(running_max, s[j]);
  }
  return running_max;
}

// R registers of acc (8·R floats) stay live across the keys; wider heads take several
// passes.
template <int R>
void accumulate_chunk(const float* w, const float* v, int64_t n, int d, float* acc) {
  __m256 a[R];
  for (int r = 0; r < R; ++r) a[r] = _mm256_loadu_ps(acc + 8 * r);
  for (int64_t j = 0; j < n; ++j) {
    const __m256 wj = _mm256_set1_ps(w[j]);
    for (int r = 0; r < R; ++r) a[r] = _mm256_fmadd_ps(wj, _mm256_loadu_ps(v + j * d + 8 * r), a[r]);
  }
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(acc + 8 * r, a[r]);
}

void accumulate(const float* w, const float* v, int64_t n, int d, float* acc) {
  int i = 0;
  for (; i + 64 <= d; i += 64) accumulate_chunk<8>(w, v + i, n, d, acc + i);
  for (; i + 32 <= d; i += 32) accumulate_chunk<4>(w, v + i, n, d, acc + i);
  for (; i + 8 <= d; i += 8) accumulate_chunk<1>(w, v + i, n, d, acc + i);
  for (; i < d; ++i)
    for (int64_t j = 0; j < n; ++j) acc[i] += w[j] * v[j * d + i];
}

const AttentionKernels kKernels = {scores, accumulate};

}  // namespace

const AttentionKernels* attention_kernels_avx2() { return &kKernels; }

}  // namespace sy::cpu::detail
