// Expands a Q8_0 matrix to bf16, for products with more rows than the GEMV takes: the
// bf16 copy then goes through the cuBLASLt GEMM.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/q8_0_gemv.cuh"

namespace sy::cuda {

struct Q8_0DequantArgs {
  Q8_0Matrix w;
  __nv_bfloat16* out = nullptr;  // [w.n, w.k]: bf16(fp32(scale) · quant)
};

cudaError_t q8_0_dequantize(const Q8_0DequantArgs& a, cudaStream_t stream);

}  // namespace sy::cuda
