// Products with weights kept in their stored type: y[m, n] = x[m, k] · W[n, k]ᵀ for W in
// float32, f16, bf16, Q8_0, Q4_0, Q4_K, Q5_K or Q6_K (common/dtype.h's block layouts; only its header-only structs
// are used), float32 x and y. The weights are read where they lie (a mapped file), so a
// decode step reads each weight byte once, in the file's type: half (bf16) or a quarter
// (Q8_0) of the float32 bytes.
//
// Kernels: a scalar one and SIMD ones (AVX2+FMA+F16C; AVX-512 F/BW/VL/DQ, whose 32
// registers hold wider tiles; AVX-512 with VNNI: the block types on 512-bit vectors of
// two weight columns, one vpdpbusd per block product, linear_tile512.h),
// each compiled in a file of its own with its target flags and chosen once at run time
// by what the processor has (SWITCHYARD_CPU_SIMD or set_simd_level lowers the
// choice, so tests check every level the machine has). The block types are multiplied with
// x quantized to int8 per block of 32 (a float32 scale per block): integer dot products,
// exact within a block, then scaled; that is where a CPU's speed on Q8_0 comes from, at
// the cost of the activations' quantization error (docs/NUMERICS.md).
//
// Every element of y is one fixed sequence of operations that depends only on k and the
// weight type, never on m, the other rows, the thread split or the SIMD level: the
// product is batch-invariant (docs/NUMERICS.md) unless `fast_prefill` lets steps of many
// rows dequantize weight tiles to float32 for OpenBLAS sgemm (or, for block types on a
// processor with AMX, multiply int8 tiles: linear_amx.cpp). The sequence, eight float
// lanes, summed at the end as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)):
// - float weights: invariant_gemm.h's (lane l accumulates x[i]·w[i], i ≡ l mod 8, by
//   fused multiply-add, the weight widened to float32 exactly; a missing tail element is
//   0·0), so a bf16 matrix gives the bits its float32 widening gives through
//   matmul_nt_invariant;
// - Q8_0, Q4_0 (x quantized as for Q8_0): per block b, lane l adds
//   fma(d_x·d_w, Σ of the four int8 products 4l..4l+3);
// - Q4_K, Q5_K: per sub-block of 32, lane l adds fma(d_x·(d·sc), Σ of four q·q_x), a
//   ninth sum adds fma(dmin·mn, d_x·Σ q_x), subtracted after the tree (linear_tile.h);
// - Q6_K: per 32 values, lane l adds fma(d_x·(d·sc), Σ of four (q − 32)·q_x), sc the
//   16-value sub-block's (lanes 0-3: the first, 4-7: the second).
// Every level, scalar included, performs exactly these operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dtype.h"

namespace sy::cpu {

class ThreadPool;

enum class SimdLevel {
  kScalar = 0,
  kAvx2 = 1,        // AVX2, FMA, F16C
  kAvx512 = 2,      // AVX-512 F, BW, VL, DQ
  kAvx512Vnni = 3,  // the above with AVX512-VNNI (int8 dot products in one instruction)
};

const char* simd_level_name(SimdLevel l);
// The best level this build and processor have.
SimdLevel detected_simd_level();
// The level products use: detected_simd_level(), lowered by SWITCHYARD_CPU_SIMD
// ("scalar", "avx2", "avx512", "avx512vnni") when set.
SimdLevel simd_level();
// Sets the level products use (clamped to the detected one); returns the level set.
// Process-wide: for tests and benchmarks, not while products run.
SimdLevel set_simd_level(SimdLevel l);

// Whether linear() takes weights of this type.
bool linear_supports(DType t);

// Rows [0, n) of a weight matrix in its stored type: row j's k values start at
// data + j * row_stride (bytes), whole blocks (k % 32 == 0 for Q8_0/Q4_0, % 256 for the K-quants). Its outputs go to
// y[:, y_col0 + j], so one matrix may be several slices of different types (Q, K and V
// stored separately, a file mixing types per tensor) without copying them together.
struct WeightSlice {
  DType type = DType::kF32;
  int64_t n = 0;
  const uint8_t* data = nullptr;
  size_t row_stride = 0;
  int64_t y_col0 = 0;
};

struct LinearOptions {
  // Steps of at least kFastPrefillRows rows dequantize weight tiles to float32 and call
  // OpenBLAS sgemm: not batch-invariant. Block-type slices multiply x quantized and widened
  // back, so the two paths differ by float32 rounding only.
  bool fast_prefill = false;
  // Under fast_prefill, where the processor has AMX (amx_usable()) and simd_level() is the
  // top one (avx512vnni, not lowered): block-type slices go to AMX int8 tiles (exact
  // integer sums per block, as the int8 kernels, then the scales), and bf16 slices with
  // k % 32 == 0 to AMX bf16 tiles (x rounded to bf16, products exact, fp32 sums), instead
  // of dequantized sgemm. False keeps sgemm (the bench's `noamx` arm, tests).
  bool amx = true;
  // The SIMD kernels load the next tile's weight rows into L1 while a tile runs
  // (software prefetch) where x's rows fit one kernel call (decode): those steps read
  // each weight row once, and rows too short for the hardware prefetcher. Same results
  // either way; false is the bench's `nopf` arm.
  bool prefetch = true;
};

// Whether this processor has AMX-TILE, AMX-INT8 and AMX-BF16 and Linux lets this process
// use them.
bool amx_usable();

// y[i, s.y_col0 + j] = Σ_c x[i, c] · W_s[j, c] for every slice s, i < m, j < s.n;
// x [m, k] row-major (ldx k), y with row stride ldy. Spread over `pool` by weight rows.
void linear(const float* x, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
            ThreadPool& pool, const LinearOptions& opt = {});

// Row counts from which fast_prefill takes the sgemm path.
inline constexpr int64_t kFastPrefillRows = 16;

// Converts n values (whole blocks) of a weight row to float32.
void weight_row_to_f32(DType t, const uint8_t* src, float* dst, int64_t n);

}  // namespace sy::cpu
