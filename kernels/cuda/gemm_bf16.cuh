// BF16 matrix products through cuBLASLt: y[m, n] = x[m, k] · w[n, k]ᵀ, row-major, bf16
// inputs, fp32 accumulation, bf16 or fp32 output. One algorithm is chosen by cuBLASLt's
// heuristic per (m, n, k, output type), once, and cached; the workspace is allocated
// once, so calls can be captured in a CUDA graph. With a fixed algorithm
// (set_fixed_algorithm_rows) every row count of one weight shape runs the same algorithm,
// without split-K, so that a row's result does not depend on how many rows share the call
// (batch-invariant numerics, docs/NUMERICS.md).
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/cuda/device_buffer.cuh"

namespace sy::cuda {

enum class GemmOut { kBF16, kF32 };

class GemmBf16 {
 public:
  GemmBf16() = default;
  ~GemmBf16();
  GemmBf16(const GemmBf16&) = delete;
  GemmBf16& operator=(const GemmBf16&) = delete;

  // Creates the cuBLASLt handle and the workspace (32 MiB is what Hopper's kernels use)
  // on the current device.
  cudaError_t init(size_t workspace_bytes = size_t{32} << 20);

  // y = x · wᵀ. Returns cudaErrorNotSupported when cuBLASLt has no algorithm for the
  // shape, another error when it fails; last_status() then holds cuBLASLt's status.
  cudaError_t matmul_nt(const __nv_bfloat16* x, const __nv_bfloat16* w, void* y, GemmOut out,
                        int64_t m, int64_t n, int64_t k, cudaStream_t stream);


  // rows > 0: every product of one (n, k, output) shape runs the algorithm cuBLASLt's
  // heuristic picks for `rows` rows among those that reduce over k in one pass (no
  // split-K), whatever m is; a shape where cuBLASLt refuses it for some m is an error
  // (cudaErrorNotSupported), never a silent switch. 0 (the default): per-m heuristic.
  // Changing it drops the cached plans. (cuBLASLt's per-m choices among one-pass
  // algorithms do not agree across m, nor does its m = 1 choice applied to every m:
  // measured on the H200, docs/NUMERICS.md.)
  void set_fixed_algorithm_rows(int64_t rows);

  cublasStatus_t last_status() const { return last_status_; }
  size_t cached_plans() const { return plans_.size(); }

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Shape = std::tuple<int64_t, int64_t, int64_t, GemmOut>;

  // Fills the plan's descriptors and its heuristic candidates (at most `want`; with
  // one_pass, only algorithms without split-K reduction).
  cudaError_t make_plan(const Shape& shape, Plan& plan, int want,
                        std::vector<cublasLtMatmulAlgo_t>& candidates, bool one_pass = false);
  // The fixed algorithm of a weight shape (set_fixed_algorithm_rows), found once.
  cudaError_t fixed_algorithm(int64_t n, int64_t k, GemmOut out, cublasLtMatmulAlgo_t& algo);
  cudaError_t run_plan(const Plan& plan, const __nv_bfloat16* x, const __nv_bfloat16* w, void* y,
                       cudaStream_t stream);
  static void destroy(Plan& plan);

  cublasLtHandle_t handle_ = nullptr;
  int64_t fixed_rows_ = 0;
  std::map<Shape, cublasLtMatmulAlgo_t> fixed_;  // by (0, n, k, output)
  DeviceBuffer workspace_;
  std::map<Shape, Plan> plans_;
  cublasStatus_t last_status_ = CUBLAS_STATUS_SUCCESS;
};

}  // namespace sy::cuda
