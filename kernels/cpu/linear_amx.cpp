// linear()'s block-type products of many rows on Intel AMX (linear_kernels.h's
// linear_amx): the prefill path of fast_prefill where the processor has AMX-TILE and
// AMX-INT8 (Sapphire Rapids and later) and Linux granted this process the tile data.
//
// A tile product C[16 × 16] int32 += A[16 × K bytes] · B[K/4 × 64 bytes] sums K int8
// products per element exactly. A is 16 rows of x quantized per block of 32 (XBlockQ8, read
// where quantize_x_q8 wrote them: the tile load's stride steps from row to row), B is 16
// weight columns of one block, unpacked once per panel into the tile's layout (4 bytes
// of one column side by side: row g holds values 4g..4g+3 of every column). Every block
// type is values times one float scale per sub-block of 32 (Q6_K: 16) and, for the
// K-quants with minimums, minus a float per sub-block times x's block sum; all of them fit
// int8 (Q4_K's 0..15, Q5_K's 0..31, Q6_K's q − 32, Q4_0's q − 8), so one signed
// product (tdpbssd) serves all. After each sub-block the four C tiles are stored and
// added to float accumulators with the scales: d_x · d_w · Σ, the same exact integer sums
// as the int8 kernels, summed over blocks in another order (float32 rounding apart).
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cpuid.h>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "kernels/cpu/linear_kernels.h"

namespace sy::cpu::detail {
namespace {

constexpr int kTile = kAmxTile;  // rows of x, and weight columns, per tile

// The tile registers: C (accumulators) 0-3, A (x) 4-5, B (weights) 6-7.
TileConfig config_for(int sub) {
  TileConfig c;
  for (int t = 0; t < 4; ++t) c.rows[t] = kTile, c.colsb[t] = 64;
  for (int t = 4; t < 6; ++t) c.rows[t] = kTile, c.colsb[t] = static_cast<uint16_t>(sub);
  for (int t = 6; t < 8; ++t) c.rows[t] = static_cast<uint8_t>(sub / 4), c.colsb[t] = 64;
  return c;
}

bool detect_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool tile = (edx >> 24) & 1, int8 = (edx >> 25) & 1, bf16 = (edx >> 22) & 1;
  if (!tile || !int8 || !bf16) return false;
  // Linux hands out the 8 KiB of tile state only on request (arch_prctl
  // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), for every thread of the process.
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
}

// One weight row (k values) as int8 values, a scale per sub-block and, for Q4_K/Q5_K, a
// minimum per 32 (value = scale · q − min).
struct RowUnpacked {
  int8_t* q;
  float* scale;
  float* min;  // null for the types without minimums
};

template <class Blk>
void unpack_k4(const Blk* b, int64_t k, RowUnpacked out) {
  for (int64_t s = 0; s < k / kQKBlockSize; ++s) {
    uint8_t sc[8], mn[8];
    unpack_q4_k_scales(b[s].scales, sc, mn);
    const float d = f16_to_f32(b[s].d), dmin = f16_to_f32(b[s].dmin);
    int8_t* q = out.q + s * kQKBlockSize;
    for (int sub = 0; sub < 8; ++sub) {
      out.scale[s * 8 + sub] = d * sc[sub];
      out.min[s * 8 + sub] = dmin * mn[sub];
      const uint8_t* qs = b[s].qs + 32 * (sub / 2);
      const int shift = sub % 2 ? 4 : 0;
      for (int l = 0; l < 32; ++l) {
        int v = (qs[l] >> shift) & 0x0f;
        if constexpr (std::is_same_v<Blk, BlockQ5_K>) v |= ((b[s].qh[l] >> sub) & 1) << 4;
        q[sub * 32 + l] = static_cast<int8_t>(v);
      }
    }
  }
}

void unpack_row(DType t, const uint8_t* src, int64_t k, RowUnpacked out) {
  switch (t) {
    case DType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < k / kQ8_0BlockSize; ++i) {
        out.scale[i] = f16_to_f32(b[i].d);
        std::memcpy(out.q + i * kQ8_0BlockSize, b[i].qs, kQ8_0BlockSize);
      }
      return;
    }
    case DType::kQ4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < k / kQ4_0BlockSize; ++i) {
        out.scale[i] = f16_to_f32(b[i].d);
        int8_t* q = out.q + i * kQ4_0BlockSize;
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<int8_t>((b[i].qs[j] & 0x0f) - 8);
          q[j + 16] = static_cast<int8_t>((b[i].qs[j] >> 4) - 8);
        }
      }
      return;
    }
    case DType::kQ4_K: return unpack_k4(reinterpret_cast<const BlockQ4_K*>(src), k, out);
    case DType::kQ5_K: return unpack_k4(reinterpret_cast<const BlockQ5_K*>(src), k, out);
    case DType::kQ6_K: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(src);
      for (int64_t s = 0; s < k / kQKBlockSize; ++s) {
        const float d = f16_to_f32(b[s].d);
        for (int j = 0; j < 16; ++j) out.scale[s * 16 + j] = d * static_cast<float>(b[s].scales[j]);
        for (int i = 0; i < kQKBlockSize; ++i) out.q[s * kQKBlockSize + i] = static_cast<int8_t>(q6_k_q(b[s], i) - 32);
      }
      return;
    }
    default: return;
  }
}

// A panel: up to kAmxPanel weight columns of one slice in B-tile layout, per block of 32
// values and per 16-column tile: 8 rows of 64 bytes (column c's values 4g..4g+3 at
// row g, bytes 4c..4c+3), then the scales and minimums of those columns.
struct Panel {
  int sub = 32;  // values per scale: 32, or 16 (Q6_K)
  int64_t nb = 0;
  bool mins = false;
  std::vector<int8_t> b;     // [tile][block][8][64]
  std::vector<float> scale;  // [tile][sub-block][16]
  std::vector<float> min;    // [tile][block][16]
  std::vector<int8_t> row_q;
  std::vector<float> row_scale, row_min;

  void fill(const WeightSlice& s, int64_t j0, int64_t cols, int64_t k) {
    sub = s.type == DType::kQ6_K ? 16 : 32;
    nb = k / 32;
    mins = s.type == DType::kQ4_K || s.type == DType::kQ5_K;
    const int64_t subs = k / sub;
    b.assign(static_cast<size_t>(2 * nb * 8 * 64), 0);
    scale.assign(static_cast<size_t>(2 * subs * kTile), 0.0f);
    min.assign(static_cast<size_t>(2 * nb * kTile), 0.0f);
    row_q.resize(static_cast<size_t>(k));
    row_scale.resize(static_cast<size_t>(subs));
    row_min.resize(static_cast<size_t>(nb));
    for (int64_t c = 0; c < cols; ++c) {
      unpack_row(s.type, s.data + static_cast<size_t>(j0 + c) * s.row_stride, k,
                 {row_q.data(), row_scale.data(), mins ? row_min.data() : nullptr});
      const int64_t tile = c / kTile, col = c % kTile;
      int8_t* bt = b.data() + tile * nb * 512;
      for (int64_t blk = 0; blk < nb; ++blk)
        for (int g = 0; g < 8; ++g) std::memcpy(bt + blk * 512 + g * 64 + col * 4, row_q.data() + blk * 32 + g * 4, 4);
      for (int64_t i = 0; i < subs; ++i) scale[static_cast<size_t>((tile * subs + i) * kTile + col)] = row_scale[static_cast<size_t>(i)];
      if (mins)
        for (int64_t i = 0; i < nb; ++i) min[static_cast<size_t>((tile * nb + i) * kTile + col)] = row_min[static_cast<size_t>(i)];
    }
  }
};

// acc[r][c] += float(C[r][c]) · (dx[r] · scale[c]) for one 16 × 16 tile.
inline void add_scaled(const int32_t* c, const XBlockQ8* x, int64_t ldx, const float* scale, float* acc) {
  const __m512 sv = _mm512_loadu_ps(scale);
  for (int r = 0; r < kTile; ++r) {
    const __m512 v = _mm512_cvtepi32_ps(_mm512_loadu_si512(c + r * kTile));
    const __m512 s = _mm512_mul_ps(sv, _mm512_set1_ps(x[r * ldx].d));
    _mm512_storeu_ps(acc + r * kTile, _mm512_fmadd_ps(v, s, _mm512_loadu_ps(acc + r * kTile)));
  }
}

// acc[r][c] −= x's block sum (d · Σ qs) of row r · min[c].
inline void sub_mins(const XBlockQ8* x, int64_t ldx, const float* min, float* acc) {
  const __m512 mv = _mm512_loadu_ps(min);
  for (int r = 0; r < kTile; ++r)
    _mm512_storeu_ps(acc + r * kTile, _mm512_fnmadd_ps(_mm512_set1_ps(x[r * ldx].dsum), mv, _mm512_loadu_ps(acc + r * kTile)));
}

// Rows [r0, r0 + 32) of x (quantized, padded with zero rows to a multiple of 32) against a
// panel: 2 × 2 tiles of 16 rows by 16 columns, written to y where row < m and column < cols.
void panel_rows(const Panel& p, const XBlockQ8* xq, int64_t r0, int64_t m, int64_t cols, float* y, int64_t ldy) {
  alignas(64) int32_t c[4][kTile * kTile];
  alignas(64) float acc[4][kTile * kTile] = {};
  const int64_t nb = p.nb, subs_per_block = 32 / p.sub, subs = nb * subs_per_block;
  const size_t xstride = static_cast<size_t>(nb) * sizeof(XBlockQ8);
  const XBlockQ8* x0 = xq + r0 * nb;
  const XBlockQ8* x1 = x0 + kTile * nb;
  for (int64_t blk = 0; blk < nb; ++blk) {
    for (int64_t h = 0; h < subs_per_block; ++h) {
      const int64_t si = blk * subs_per_block + h;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      _tile_loadd(4, x0[blk].qs + h * p.sub, xstride);
      _tile_loadd(5, x1[blk].qs + h * p.sub, xstride);
      _tile_loadd(6, p.b.data() + blk * 512 + h * p.sub / 4 * 64, 64);
      _tile_loadd(7, p.b.data() + (nb + blk) * 512 + h * p.sub / 4 * 64, 64);
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
      _tile_stored(0, c[0], 64);
      _tile_stored(1, c[1], 64);
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
      for (int t = 0; t < 4; ++t)
        add_scaled(c[t], (t < 2 ? x0 : x1) + blk, nb, p.scale.data() + ((t % 2) * subs + si) * kTile, acc[t]);
    }
    if (p.mins)
      for (int t = 0; t < 4; ++t) sub_mins((t < 2 ? x0 : x1) + blk, nb, p.min.data() + ((t % 2) * nb + blk) * kTile, acc[t]);
  }
  store_tiles(acc, r0, m, cols, y, ldy);
}

}  // namespace

void linear_amx(const XBlockQ8* xq, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                ThreadPool& pool) {
  for_each_panel(w, kAmxPanel, pool, [&](const WeightSlice& s, int64_t j0, int64_t cols) {
    thread_local Panel panel;
    panel.fill(s, j0, cols, k);
    const TileConfig cfg = config_for(panel.sub);
    _tile_loadconfig(&cfg);
    for (int64_t r0 = 0; r0 < m; r0 += kAmxPanel) panel_rows(panel, xq, r0, m, cols, y + s.y_col0 + j0, ldy);
    _tile_release();
  });
}

}  // namespace sy::cpu::detail

namespace sy::cpu {

bool amx_usable() {
  static const bool available = detail::detect_amx();
  return available;
}

}  // namespace sy::cpu
