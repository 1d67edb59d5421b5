// linear()'s bf16 products of many rows on Intel AMX (linear_kernels.h's
// linear_amx_bf16): the prefill path of fast_prefill for bf16 weights where amx_usable().
//
// A tile product C[16 × 16] fp32 += A[16 × 32 bf16] · B[16 × 16 pairs] adds 32 products
// per element, each exact in fp32 (bf16 × bf16), accumulated in fp32 (round to nearest
// even). A is 16 rows of x rounded to bf16 (the caller's buffer, row stride k), B is 16
// weight columns of 32 values in the tile's layout: row g holds values 2g and 2g + 1 of
// every column side by side, which the weights' rows give 4 bytes at a time (a panel of
// 32 columns is rearranged once and serves every group of 32 rows). No per-block scale:
// the C tiles accumulate over the whole of k and are stored once.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/linear_kernels.h"

namespace sy::cpu::detail {
namespace {

constexpr int kTile = kAmxTile;  // rows of x, and weight columns, per tile
constexpr int kChunk = 32;         // bf16 values of k per tile product (64 bytes)
constexpr int kChunkElems = kTile * kChunk;  // a B tile: 16 pair rows × 16 columns × 2

// Every tile 16 rows of 64 bytes: C (fp32 accumulators) 0-3, A (x) 4-5, B (weights) 6-7.
TileConfig config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = kTile, c.colsb[t] = 64;
  return c;
}

// Up to kAmxPanel columns of one bf16 slice as B tiles: [tile][chunk][pair row g][column][2].
void fill_panel(const WeightSlice& s, int64_t j0, int64_t cols, int64_t k, std::vector<uint16_t>& b) {
  const int64_t chunks = k / kChunk;
  b.assign(static_cast<size_t>(2 * chunks * kChunkElems), 0);
  for (int64_t c = 0; c < cols; ++c) {
    const uint8_t* row = s.data + static_cast<size_t>(j0 + c) * s.row_stride;
    uint16_t* bt = b.data() + (c / kTile) * chunks * kChunkElems + (c % kTile) * 2;
    for (int64_t ch = 0; ch < chunks; ++ch)
      for (int g = 0; g < kTile; ++g) std::memcpy(bt + ch * kChunkElems + g * 2 * kTile, row + (ch * kChunk + 2 * g) * 2, 4);
  }
}

// Rows [r0, r0 + 32) of x (bf16, zero rows past m up to a multiple of 32) against a
// panel: 2 × 2 tiles, written to y where row < m and column < cols.
void panel_rows(const std::vector<uint16_t>& b, const uint16_t* xb, int64_t k, int64_t r0, int64_t m, int64_t cols,
                float* y, int64_t ldy) {
  const int64_t chunks = k / kChunk;
  const size_t xstride = static_cast<size_t>(k) * 2;
  const uint16_t* x0 = xb + r0 * k;
  const uint16_t* x1 = x0 + kTile * k;
  const uint16_t* b0 = b.data();
  const uint16_t* b1 = b0 + chunks * kChunkElems;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t ch = 0; ch < chunks; ++ch) {
    _tile_loadd(4, x0 + ch * kChunk, xstride);
    _tile_loadd(5, x1 + ch * kChunk, xstride);
    _tile_loadd(6, b0 + ch * kChunkElems, 64);
    _tile_loadd(7, b1 + ch * kChunkElems, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float c[4][kTile * kTile];
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  store_tiles(c, r0, m, cols, y, ldy);
}

}  // namespace

void linear_amx_bf16(const uint16_t* xb, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                     ThreadPool& pool) {
  for_each_panel(w, kAmxPanel, pool, [&](const WeightSlice& s, int64_t j0, int64_t cols) {
    thread_local std::vector<uint16_t> panel;
    fill_panel(s, j0, cols, k, panel);
    const TileConfig cfg = config();
    _tile_loadconfig(&cfg);
    for (int64_t r0 = 0; r0 < m; r0 += kAmxPanel) panel_rows(panel, xb, k, r0, m, cols, y + s.y_col0 + j0, ldy);
    _tile_release();
  });
}

}  // namespace sy::cpu::detail
