// A model's linear layer on the GPU, whichever format its weight is kept in: bf16 goes
// to the bf16 GEMV for up to gemv_max_rows() rows (small decode batches), otherwise to
// the cuBLASLt GEMM; Q8_0 and the 4- to 6-bit formats (Q4_0, Q4_K, Q5_K, Q6_K) go to
// their GEMV for up to 8 rows and to the quantized GEMM (quant_gemm.cuh) for up to 64,
// and are otherwise expanded to bf16 in a scratch buffer and multiplied by cuBLASLt.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/gemm_bf16.cuh"
#include "kernels/cuda/gemv_bf16.cuh"
#include "kernels/cuda/q8_0_gemv.cuh"
#include "kernels/cuda/quant_gemm.cuh"
#include "kernels/cuda/quant_matrix.cuh"

namespace sy::cuda {

// Parts a quantized weight may have: a fused weight (Q, K and V) whose parts the file
// stores in different formats (Q4_K_M files keep V in Q6_K in some layers) keeps each
// part in its own.
inline constexpr int kMaxQuantParts = 3;

// Weight [n, k] of y = x · Wᵀ: bf16, Q8_0, or up to kMaxQuantParts quantized row ranges
// (part i: rows [Σ n of the parts before it, + its n), k columns).
struct LinearWeight {
  int64_t n = 0;
  int64_t k = 0;
  const __nv_bfloat16* bf16 = nullptr;  // [n, k], or null for Q8_0 and quant
  Q8_0Matrix q8_0;                      // quants null unless Q8_0
  QuantMatrix quant[kMaxQuantParts];
  int quant_parts = 0;
  bool is_q8_0() const { return q8_0.quants != nullptr; }
  bool is_quant() const { return quant_parts > 0; }
};

class Linear {
 public:
  // max_expand_elements: the largest quantized weight (n · k) that run() will expand to
  // bf16; 0 when every weight is bf16.
  cudaError_t init(size_t max_expand_elements);

  // y[m, n] = x[m, k] · wᵀ, y bf16 or fp32 as `out` says.
  cudaError_t run(const LinearWeight& w, const __nv_bfloat16* x, int64_t m, void* y, GemmOut out,
                  cudaStream_t stream);

  // bf16 products of at most `rows` rows (0..kGemvBf16MaxRows) go to gemv_bf16 where
  // it takes the shape; 0 sends every bf16 product to cuBLASLt.
  void set_gemv_max_rows(int rows) { gemv_max_rows_ = rows; }
  int gemv_max_rows() const { return gemv_max_rows_; }

  // Quantized products of 9 to `rows` rows (at most kQuantGemmMaxRows) go to quant_gemm;
  // larger ones are expanded to bf16 for cuBLASLt (0: all past the GEMVs).
  void set_quant_gemm_max_rows(int rows) { quant_gemm_max_rows_ = rows; }

  // Batch-invariant numerics (docs/NUMERICS.md): every product of a weight, whatever its
  // row count, runs the GEMM with one fixed algorithm (GemmBf16::set_fixed_algorithm_rows
  // with `reference_rows`), never the GEMVs, whose sums run in another order; quantized
  // weights are expanded to bf16 for every product. 0 turns it off.
  void set_batch_invariant(int64_t reference_rows);
  bool batch_invariant() const { return batch_invariant_; }

  GemmBf16& gemm() { return gemm_; }

 private:
  bool takes_gemv(const LinearWeight& w, const __nv_bfloat16* x, int64_t m) const;
  QuantGemmArgs gemm_args(const __nv_bfloat16* x, int64_t m, void* y, GemmOut out, int64_t ldy);
  cudaError_t run_quant(const LinearWeight& w, const __nv_bfloat16* x, int64_t m, void* y,
                        GemmOut out, cudaStream_t stream);

  GemmBf16 gemm_;
  int gemv_max_rows_ = 0;
  // Warps per weight row of the one-row GEMV where k allows (GemvBf16Args::split): 4
  // measured fastest on the H200 (docs/PERFORMANCE.md; 1 and 2 stay kernel options).
  static constexpr int kGemvSplit = 4;
  bool batch_invariant_ = false;
  int quant_gemm_max_rows_ = kQuantGemmMaxRows;
  DeviceBuffer scratch_;  // bf16 expansion of one quantized weight
};

}  // namespace sy::cuda
