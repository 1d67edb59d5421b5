#include "kernels/cuda/linear.cuh"

#include <algorithm>

#include "kernels/cuda/q8_0_dequant.cuh"
#include "kernels/cuda/quant_dequant.cuh"
#include "kernels/cuda/quant_gemm.cuh"
#include "kernels/cuda/quant_gemv.cuh"

namespace sy::cuda {
namespace {

// Column `col` of row 0 of y, an fp32 or bf16 output.
void* at_column(void* y, GemmOut out, int64_t col) {
  return out == GemmOut::kF32 ? static_cast<void*>(static_cast<float*>(y) + col)
                              : static_cast<void*>(static_cast<__nv_bfloat16*>(y) + col);
}

// The GEMV arguments' one output: y as fp32 or bf16.
template <typename Args>
void set_output(Args& a, GemmOut out, void* y) {
  if (out == GemmOut::kF32)
    a.y_f32 = static_cast<float*>(y);
  else
    a.y_bf16 = static_cast<__nv_bfloat16*>(y);
}

}  // namespace

void Linear::set_batch_invariant(int64_t reference_rows) {
  batch_invariant_ = reference_rows > 0;
  gemm_.set_fixed_algorithm_rows(reference_rows);
}

bool Linear::takes_gemv(const LinearWeight& w, const __nv_bfloat16* x, int64_t m) const {
  return !batch_invariant_ && w.bf16 && m <= gemv_max_rows_ &&
         gemv_bf16_supports(w.bf16, w.n, w.k, x, static_cast<int>(m));
}

cudaError_t Linear::init(size_t max_expand_elements) {
  if (const cudaError_t e = gemm_.init(); e != cudaSuccess) return e;
  return max_expand_elements ? scratch_.allocate(max_expand_elements * sizeof(__nv_bfloat16))
                             : cudaSuccess;
}

// The quantized GEMM's arguments for m rows into y, the scratch as its split-k workspace.
QuantGemmArgs Linear::gemm_args(const __nv_bfloat16* x, int64_t m, void* y, GemmOut out, int64_t ldy) {
  QuantGemmArgs a;
  a.x = x;
  a.m = static_cast<int>(m);
  a.ldy = ldy;
  set_output(a, out, y);
  a.workspace = scratch_.as<float>();
  a.workspace_bytes = scratch_.bytes();
  return a;
}

// Each part's GEMV (up to 8 rows) or quantized GEMM (up to 64) writes its columns of y
// (row stride w.n); past that, or with batch-invariant numerics, every part is expanded
// into its rows of the scratch and one cuBLASLt GEMM takes the whole weight.
cudaError_t Linear::run_quant(const LinearWeight& w, const __nv_bfloat16* x, int64_t m, void* y,
                              GemmOut out, cudaStream_t stream) {
  const bool gemv = m <= kQuantGemvMaxRows && !batch_invariant_;
  const bool qgemm = !gemv && m <= std::min(quant_gemm_max_rows_, kQuantGemmMaxRows) && !batch_invariant_;
  if (!gemv && !qgemm && static_cast<size_t>(w.n * w.k) * sizeof(__nv_bfloat16) > scratch_.bytes())
    return cudaErrorInvalidValue;
  int64_t rows = 0;
  for (int i = 0; i < w.quant_parts; ++i) {
    if (w.quant[i].k != w.k) return cudaErrorInvalidValue;
    rows += w.quant[i].n;
  }
  if (w.quant_parts > kMaxQuantParts || rows != w.n) return cudaErrorInvalidValue;
  int64_t row0 = 0;
  for (int i = 0; i < w.quant_parts; ++i) {
    const QuantMatrix& part = w.quant[i];
    cudaError_t e;
    if (gemv) {
      QuantGemvArgs a;
      a.w = part;
      a.x = x;
      a.m = static_cast<int>(m);
      a.ldy = w.n;
      set_output(a, out, at_column(y, out, row0));
      e = quant_gemv(a, stream);
    } else if (qgemm) {
      QuantGemmArgs a = gemm_args(x, m, at_column(y, out, row0), out, w.n);
      a.w = part;
      e = quant_gemm(a, stream);
    } else {
      e = quant_dequantize({part, scratch_.as<__nv_bfloat16>() + row0 * w.k}, stream);
    }
    if (e != cudaSuccess) return e;
    row0 += part.n;
  }
  return gemv || qgemm ? cudaSuccess
                       : gemm_.matmul_nt(x, scratch_.as<__nv_bfloat16>(), y, out, m, w.n, w.k, stream);
}

cudaError_t Linear::run(const LinearWeight& w, const __nv_bfloat16* x, int64_t m, void* y,
                        GemmOut out, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  if (w.is_quant()) return run_quant(w, x, m, y, out, stream);
  if (!w.is_q8_0()) {
    if (takes_gemv(w, x, m)) {
      GemvBf16Args a;
      a.w = w.bf16;
      a.n = w.n;
      a.k = w.k;
      a.x = x;
      a.m = static_cast<int>(m);
      a.split = m == 1 && w.k % (8 * kGemvSplit) == 0 ? kGemvSplit : 1;
      set_output(a, out, y);
      return gemv_bf16(a, stream);
    }
    return gemm_.matmul_nt(x, w.bf16, y, out, m, w.n, w.k, stream);
  }
  if (m <= kQ8_0GemvMaxRows && !batch_invariant_) {
    Q8_0GemvArgs a;
    a.w = w.q8_0;
    a.x = x;
    a.m = static_cast<int>(m);
    set_output(a, out, y);
    return q8_0_gemv(a, stream);
  }
  if (m <= std::min(quant_gemm_max_rows_, kQuantGemmMaxRows) && !batch_invariant_) {
    QuantGemmArgs a = gemm_args(x, m, y, out, 0);
    a.q8_0 = w.q8_0;
    return quant_gemm(a, stream);
  }
  if (static_cast<size_t>(w.n * w.k) * sizeof(__nv_bfloat16) > scratch_.bytes())
    return cudaErrorInvalidValue;
  Q8_0DequantArgs d;
  d.w = w.q8_0;
  d.out = scratch_.as<__nv_bfloat16>();
  if (const cudaError_t e = q8_0_dequantize(d, stream); e != cudaSuccess) return e;
  return gemm_.matmul_nt(x, d.out, y, out, m, w.n, w.k, stream);
}

}  // namespace sy::cuda
