// Dequantization of the K-quants (super-blocks of 256 values) and the packing of
// Q4_K / Q5_K's 6-bit sub-block scales. Plain scalar code: the reference for kernels.
#include "common/half.h"
#include "worker/model/quants.h"

namespace sy {

void unpack_k_scales(const uint8_t p[12], uint8_t scales[8], uint8_t mins[8]) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = p[j] & 63;
    mins[j] = p[j + 4] & 63;
    // Sub-blocks 4-7: four low bits in bytes 8-11, two high bits atop bytes 0-7.
    scales[j + 4] = static_cast<uint8_t>((p[j + 8] & 0xF) | ((p[j] >> 6) << 4));
    mins[j + 4] = static_cast<uint8_t>((p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4));
  }
}

void pack_k_scales(const uint8_t scales[8], const uint8_t mins[8], uint8_t p[12]) {
  for (int j = 0; j < 4; ++j) {
    p[j] = static_cast<uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
    p[j + 4] = static_cast<uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
    p[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4));
  }
}

void dequantize_row_q4_k(const BlockQ4_K* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const BlockQ4_K& blk = src[b];
    const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    float* y = dst + b * kQKBlockSize;
    // Each 32 bytes of qs hold two sub-blocks: the even one in the low nibbles, the odd
    // one in the high nibbles.
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* q = blk.qs + 32 * pair;
      const int s0 = 2 * pair, s1 = 2 * pair + 1;
      const float d0 = d * sc[s0], m0 = dmin * mn[s0];
      const float d1 = d * sc[s1], m1 = dmin * mn[s1];
      for (int l = 0; l < 32; ++l) {
        y[64 * pair + l] = d0 * static_cast<float>(q[l] & 0xF) - m0;
        y[64 * pair + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - m1;
      }
    }
  }
}

void dequantize_row_q5_k(const BlockQ5_K* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const BlockQ5_K& blk = src[b];
    const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
    uint8_t sc[8], mn[8];
    unpack_k_scales(blk.scales, sc, mn);
    float* y = dst + b * kQKBlockSize;
    // As Q4_K; sub-block s takes its fifth bit from bit s of qh[l] (l: index within it).
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* q = blk.qs + 32 * pair;
      const int s0 = 2 * pair, s1 = 2 * pair + 1;
      const float d0 = d * sc[s0], m0 = dmin * mn[s0];
      const float d1 = d * sc[s1], m1 = dmin * mn[s1];
      for (int l = 0; l < 32; ++l) {
        const int q0 = (q[l] & 0xF) | (((blk.qh[l] >> s0) & 1) << 4);
        const int q1 = (q[l] >> 4) | (((blk.qh[l] >> s1) & 1) << 4);
        y[64 * pair + l] = d0 * static_cast<float>(q0) - m0;
        y[64 * pair + 32 + l] = d1 * static_cast<float>(q1) - m1;
      }
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQKBlockSize; ++b) {
    const BlockQ6_K& blk = src[b];
    const float d = f16_to_f32(blk.d);
    float* y = dst + b * kQKBlockSize;
    // Two halves of 128 values, each with 64 bytes of ql, 32 of qh and 8 scales. In a
    // half, value l + 32 k (k = 0..3, l = 0..31) has its low four bits in ql[l] (k = 0),
    // ql[l + 32] (k = 1), their high nibbles (k = 2, 3), and its top two bits at bit 2k
    // of qh[l]; its scale is that of sub-block (l + 32 k) / 16.
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk.ql + 64 * half;
      const uint8_t* qh = blk.qh + 32 * half;
      const int8_t* sc = blk.scales + 8 * half;
      float* yh = y + 128 * half;
      for (int l = 0; l < 32; ++l) {
        const int lo[4] = {ql[l] & 0xF, ql[l + 32] & 0xF, ql[l] >> 4, ql[l + 32] >> 4};
        for (int k = 0; k < 4; ++k) {
          const int q = (lo[k] | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
          yh[l + 32 * k] = d * static_cast<float>(sc[(l + 32 * k) / 16]) * static_cast<float>(q);
        }
      }
    }
  }
}

}  // namespace sy
