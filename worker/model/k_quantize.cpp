// Quantization into the K-quants (Q4_K, Q5_K, Q6_K) in ggml's bit layout. Two levels:
// each sub-block gets a float scale (and min) fitted to its values, then those are
// quantized against one f16 factor per super-block and the values requantized with the
// scales as the file stores them, so the error is measured against what is read back.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "worker/model/quants.h"

namespace sy {
namespace {

// Candidate inverse scales tried around the one that maps the range onto 0..nmax
// exactly: a slightly larger or smaller step often lands more values near a level.
constexpr int kSearchSteps = 10;
constexpr float kSearchDelta = 0.1f;

// Round to nearest, ties to even, as lrintf in the default mode, without its library call
// (the search rounds every value 21 times): adding 1.5 * 2^23 leaves the rounded integer
// in the low mantissa bits. The clamp keeps |v| < 2^22, where that holds; callers clamp
// the result to a few dozen levels anyway.
int nearest(float v) {
  float t = std::clamp(v, -4.0e6f, 4.0e6f) + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &t, 4);
  return (bits & 0x007fffff) - 0x00400000;
}

struct ScaleMin {
  float scale = 0, min = 0;  // x ≈ scale * q - min, min >= 0
};

// Fits x ≈ scale * q - min with q in 0..nmax and min >= 0 (ggml's K-quants store a
// non-negative min), minimising the squared error over the candidate level assignments.
ScaleMin fit_scale_min(const float* x, int n, int nmax) {
  float lo = 0, hi = x[0];
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (hi <= lo) return {0.0f, -lo};  // all values equal lo (<= 0): the min alone holds them
  ScaleMin best{(hi - lo) / static_cast<float>(nmax), -lo};
  float best_err = INFINITY, sx = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sx += x[i];
    sxx += x[i] * x[i];
  }
  for (int step = -kSearchSteps; step <= kSearchSteps; ++step) {
    const float inv = (static_cast<float>(nmax) + kSearchDelta * static_cast<float>(step)) / (hi - lo);
    // The levels this scale picks, then the least-squares scale and offset for them.
    float sq = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const auto q = static_cast<float>(std::clamp(nearest((x[i] - lo) * inv), 0, nmax));
      sq += q;
      sqq += q * q;
      sqx += q * x[i];
    }
    const float det = static_cast<float>(n) * sqq - sq * sq;
    if (det <= 0) continue;
    float a = (static_cast<float>(n) * sqx - sq * sx) / det;
    float b = (sqq * sx - sq * sqx) / det;  // x ≈ a q + b
    if (b > 0) {  // a negative min is not storable: fit the scale alone with min 0
      b = 0;
      a = sqx / sqq;
    }
    if (a <= 0) continue;
    // Σ (a q + b - x)² expanded over the sums: no second pass over the values.
    const float err = a * a * sqq + 2 * a * b * sq + static_cast<float>(n) * b * b - 2 * a * sqx - 2 * b * sx + sxx;
    if (err < best_err) {
      best_err = err;
      best = {a, -b};
    }
  }
  return best;
}

// Fits x ≈ scale * q with q in -32..31 (Q6_K's levels), minimising the squared error.
// The value of largest magnitude goes to the long side (-32), as in Q4_0.
float fit_symmetric_scale(const float* x, int n) {
  float extreme = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  if (extreme == 0) return 0;
  float best = extreme / -32.0f, best_err = INFINITY;
  for (int step = -kSearchSteps; step <= kSearchSteps; ++step) {
    const float inv = -(32.0f + kSearchDelta * static_cast<float>(step)) / extreme;
    float sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const auto q = static_cast<float>(std::clamp(nearest(x[i] * inv), -32, 31));
      sqq += q * q;
      sqx += q * x[i];
    }
    if (sqq == 0) continue;
    // With the least-squares a, Σ (a q - x)² = Σx² - a Σqx; Σx² is the same for every
    // candidate, so the largest a Σqx wins.
    const float a = sqx / sqq;
    const float err = -a * sqx;
    if (err < best_err) {
      best_err = err;
      best = a;
    }
  }
  return best;
}

// The shared part of Q4_K and Q5_K: the eight sub-blocks' scales and mins fitted,
// quantized to 6 bits against d and dmin (stored as f16), and each value's level
// 0..nmax under the stored scales.
struct KLevels {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t q[kQKBlockSize];
};

KLevels quantize_k_levels(const float* x, int nmax) {
  ScaleMin fit[8];
  float max_scale = 0, max_min = 0;
  for (int s = 0; s < 8; ++s) {
    fit[s] = fit_scale_min(x + 32 * s, 32, nmax);
    max_scale = std::max(max_scale, fit[s].scale);
    max_min = std::max(max_min, fit[s].min);
  }
  KLevels out{};
  out.d = f32_to_f16(max_scale / 63.0f);
  out.dmin = f32_to_f16(max_min / 63.0f);
  // Quantize against the f16 values the file holds, not the float ones.
  const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
  uint8_t ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = static_cast<uint8_t>(d > 0 ? std::clamp(nearest(fit[s].scale / d), 0, 63) : 0);
    lm[s] = static_cast<uint8_t>(dmin > 0 ? std::clamp(nearest(fit[s].min / dmin), 0, 63) : 0);
  }
  pack_k_scales(ls, lm, out.scales);
  for (int s = 0; s < 8; ++s) {
    const float ds = d * ls[s], dm = dmin * lm[s];
    for (int i = 0; i < 32; ++i)
      out.q[32 * s + i] = static_cast<uint8_t>(ds > 0 ? std::clamp(nearest((x[32 * s + i] + dm) / ds), 0, nmax) : 0);
  }
  return out;
}

}  // namespace

void quantize_row_q4_k(const float* src, BlockQ4_K* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const KLevels k = quantize_k_levels(src + b * kQKBlockSize, 15);
    BlockQ4_K& o = dst[b];
    o.d = k.d;
    o.dmin = k.dmin;
    std::memcpy(o.scales, k.scales, sizeof(o.scales));
    // Sub-blocks 2p and 2p + 1 share bytes 32p..32p+31: low and high nibbles.
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l) o.qs[32 * p + l] = static_cast<uint8_t>(k.q[64 * p + l] | (k.q[64 * p + 32 + l] << 4));
  }
}

void quantize_row_q5_k(const float* src, BlockQ5_K* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const KLevels k = quantize_k_levels(src + b * kQKBlockSize, 31);
    BlockQ5_K& o = dst[b];
    o.d = k.d;
    o.dmin = k.dmin;
    std::memcpy(o.scales, k.scales, sizeof(o.scales));
    std::memset(o.qh, 0, sizeof(o.qh));
    // As Q4_K for the low four bits; the fifth bit of sub-block s's value l is bit s of qh[l].
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l) {
        const uint8_t q0 = k.q[64 * p + l], q1 = k.q[64 * p + 32 + l];
        o.qs[32 * p + l] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
        o.qh[l] = static_cast<uint8_t>(o.qh[l] | ((q0 >> 4) << (2 * p)) | ((q1 >> 4) << (2 * p + 1)));
      }
  }
}

void quantize_row_q6_k(const float* src, BlockQ6_K* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const float* x = src + b * kQKBlockSize;
    float scale[16];
    float extreme = 0;
    for (int s = 0; s < 16; ++s) {
      scale[s] = fit_symmetric_scale(x + 16 * s, 16);
      if (std::fabs(scale[s]) > std::fabs(extreme)) extreme = scale[s];
    }
    BlockQ6_K& o = dst[b];
    // The largest scale goes to -128, the long side of int8.
    o.d = f32_to_f16(extreme / -128.0f);
    const float d = f16_to_f32(o.d);
    uint8_t q[kQKBlockSize];
    for (int s = 0; s < 16; ++s) {
      o.scales[s] = static_cast<int8_t>(d != 0 ? std::clamp(nearest(scale[s] / d), -128, 127) : 0);
      const float ds = d * o.scales[s];
      for (int i = 0; i < 16; ++i)
        q[16 * s + i] = static_cast<uint8_t>((ds != 0 ? std::clamp(nearest(x[16 * s + i] / ds), -32, 31) : 0) + 32);
    }
    // Per half of 128: value l + 32 k keeps its low nibble in ql[l] (k = 0, 2: low, high
    // nibble) or ql[l + 32] (k = 1, 3), its top two bits at bit 2k of qh[l].
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qq = q + 128 * half;
      uint8_t* ql = o.ql + 64 * half;
      uint8_t* qh = o.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((qq[l] & 0xF) | ((qq[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((qq[l + 32] & 0xF) | ((qq[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) | ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace sy
