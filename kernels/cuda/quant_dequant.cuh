// Expands a Q4_0 / Q4_K / Q5_K / Q6_K matrix (quant_matrix.cuh) to bf16, for products
// with more rows than the GEMV takes: the bf16 copy then goes through the cuBLASLt GEMM.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/quant_matrix.cuh"

namespace sy::cuda {

struct QuantDequantArgs {
  QuantMatrix w;
  // [w.n, w.k], 16-byte aligned: bf16 of the fp32 value (the CPU dequantizer's, to the
  // rounding of one fused multiply-add).
  __nv_bfloat16* out = nullptr;
};

cudaError_t quant_dequantize(const QuantDequantArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
