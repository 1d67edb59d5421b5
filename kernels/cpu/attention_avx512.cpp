// paged_attention's inner loops (attention_kernels.h) for AVX-512F, in a file of its own
// compiled for that level; attention.cpp calls them only where simd_level() allows
// AVX-512.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/attention_kernels.h"

namespace sy::cpu::detail {
namespace {

// Two accumulators of 16 lanes: a 128-wide head is 8 FMAs a key.
inline float dot(const float* a, const float* b, int d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 32 <= d; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
  }
  for (; i + 16 <= d; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

// Four keys at a time: their independent sums hide the FMA latency that one key's
// short reduction (d / 16 FMAs) cannot. Each key's sum is the same as dot()'s.
float scores(const float* q, const float* k, int64_t n, int d, float scale, float* s, float running_max) {
  int64_t j = 0;
  if (d % 32 == 0) {
    for (; j + 4 <= n; j += 4) {
      const float* k0 = k + j * d;
      __m512 a[4][2];
      for (int r = 0; r < 4; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
      for (int i = 0; i < d; i += 32) {
        const __m512 q0 = _mm512_loadu_ps(q + i), q1 = _mm512_loadu_ps(q + i + 16);
        for (int r = 0; r < 4; ++r) {
          a[r][0] = _mm512_fmadd_ps(q0, _mm512_loadu_ps(k0 + r * d + i), a[r][0]);
          a[r][1] = _mm512_fmadd_ps(q1, _mm512_loadu_ps(k0 + r * d + i + 16), a[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r) {
        s[j + r] = _mm512_reduce_add_ps(_mm512_add_ps(a[r][0], a[r][1])) * scale;
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

// R registers of acc (16·R floats) stay live across the keys.
template <int R>
void accumulate_chunk(const float* w, const float* v, int64_t n, int d, float* acc) {
  __m512 a[R];
  for (int r = 0; r < R; ++r) a[r] = _mm512_loadu_ps(acc + 16 * r);
  for (int64_t j = 0; j < n; ++j) {
    const __m512 wj = _mm512_set1_ps(w[j]);
    for (int r = 0; r < R; ++r) a[r] = _mm512_fmadd_ps(wj, _mm512_loadu_ps(v + j * d + 16 * r), a[r]);
  }
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(acc + 16 * r, a[r]);
}

void accumulate(const float* w, const float* v, int64_t n, int d, float* acc) {
  int i = 0;
  for (; i + 128 <= d; i += 128) accumulate_chunk<8>(w, v + i, n, d, acc + i);
  for (; i + 64 <= d; i += 64) accumulate_chunk<4>(w, v + i, n, d, acc + i);
  for (; i + 16 <= d; i += 16) accumulate_chunk<1>(w, v + i, n, d, acc + i);
  for (; i < d; ++i)
    for (int64_t j = 0; j < n; ++j) acc[i] += w[j] * v[j * d + i];
}

const AttentionKernels kKernels = {scores, accumulate};

}  // namespace

const AttentionKernels* attention_kernels_avx512() { return &kKernels; }

}  // namespace sy::cpu::detail
