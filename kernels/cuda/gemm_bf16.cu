#include "kernels/cuda/gemm_bf16.cuh"

#include <cmath>

namespace sy::cuda {
namespace {

// Prefill steps come in many lengths; past this many cached shapes the cache starts
// over rather than grow without bound.
constexpr size_t kMaxPlans = 4096;

}  // namespace

GemmBf16::~GemmBf16() {
  for (auto& [shape, plan] : plans_) destroy(plan);
  if (handle_) cublasLtDestroy(handle_);
}

cudaError_t GemmBf16::init(size_t workspace_bytes) {
  if (handle_) return cudaErrorInvalidValue;
  last_status_ = cublasLtCreate(&handle_);
  if (last_status_ != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  return workspace_.allocate(workspace_bytes);
}

void GemmBf16::destroy(Plan& p) {
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  p = Plan{};
}

// Row-major y[m, n] is column-major yᵀ[n, m] = w · xᵀ: A = w read as column-major
// [k, n] and transposed, B = x read as column-major [k, m] (the "TN" layout).
cudaError_t GemmBf16::make_plan(const Shape& shape, Plan& p, int want,
                                std::vector<cublasLtMatmulAlgo_t>& candidates, bool one_pass) {
  const auto [m, n, k, out] = shape;
  const cudaDataType_t c_type = out == GemmOut::kF32 ? CUDA_R_32F : CUDA_R_16BF;
  auto ok = [&](cublasStatus_t s) {
    last_status_ = s;
    return s == CUBLAS_STATUS_SUCCESS;
  };
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  if (!ok(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
      !ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                         sizeof(trans_a))) ||
      !ok(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                         sizeof(trans_b))) ||
      !ok(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, static_cast<uint64_t>(k),
                                     static_cast<uint64_t>(n), k)) ||
      !ok(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, static_cast<uint64_t>(k),
                                     static_cast<uint64_t>(m), k)) ||
      !ok(cublasLtMatrixLayoutCreate(&p.c, c_type, static_cast<uint64_t>(n),
                                     static_cast<uint64_t>(m), n))) {
    destroy(p);
    return cudaErrorUnknown;
  }
  const size_t workspace_bytes = workspace_.bytes();
  const uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtMatmulPreference_t pref = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(want));
  int found = 0;
  const bool good =
      ok(cublasLtMatmulPreferenceCreate(&pref)) &&
      ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &workspace_bytes, sizeof(workspace_bytes))) &&
      (!one_pass ||
       ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               &reduction_mask, sizeof(reduction_mask)))) &&
      ok(cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, want,
                                        results.data(), &found));
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (!good || found == 0) {
    destroy(p);
    return good ? cudaErrorNotSupported : cudaErrorUnknown;
  }
  p.algo = results[0].algo;
  candidates.clear();
  for (int i = 0; i < found; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      candidates.push_back(results[static_cast<size_t>(i)].algo);
  return cudaSuccess;
}

void GemmBf16::set_fixed_algorithm_rows(int64_t rows) {
  fixed_rows_ = rows;
  fixed_.clear();
  for (auto& [s, plan] : plans_) destroy(plan);
  plans_.clear();
}

cudaError_t GemmBf16::fixed_algorithm(int64_t n, int64_t k, GemmOut out,
                                      cublasLtMatmulAlgo_t& algo) {
  const Shape key{0, n, k, out};
  if (const auto it = fixed_.find(key); it != fixed_.end()) {
    algo = it->second;
    return cudaSuccess;
  }
  Plan reference;
  std::vector<cublasLtMatmulAlgo_t> candidates;
  if (const cudaError_t e = make_plan({fixed_rows_, n, k, out}, reference, 1, candidates, true);
      e != cudaSuccess)
    return e;
  algo = reference.algo;
  destroy(reference);
  fixed_.emplace(key, algo);
  return cudaSuccess;
}

cudaError_t GemmBf16::matmul_nt(const __nv_bfloat16* x, const __nv_bfloat16* w, void* y,
                                GemmOut out, int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
  if (!handle_ || !x || !w || !y || m < 0 || n <= 0 || k <= 0) return cudaErrorInvalidValue;
  if (m == 0) return cudaSuccess;
  const Shape shape{m, n, k, out};
  auto it = plans_.find(shape);
  if (it == plans_.end()) {
    if (plans_.size() >= kMaxPlans) {
      for (auto& [s, plan] : plans_) destroy(plan);
      plans_.clear();
    }
    Plan p;
    std::vector<cublasLtMatmulAlgo_t> candidates;
    if (fixed_rows_ > 0) {
      cublasLtMatmulAlgo_t algo{};
      if (const cudaError_t e = fixed_algorithm(n, k, out, algo); e != cudaSuccess) return e;
      if (const cudaError_t e = make_plan(shape, p, 1, candidates, true); e != cudaSuccess) return e;
      cublasLtMatmulHeuristicResult_t check{};
      last_status_ = cublasLtMatmulAlgoCheck(handle_, p.desc, p.a, p.b, p.c, p.c, &algo, &check);
      if (last_status_ != CUBLAS_STATUS_SUCCESS || check.workspaceSize > workspace_.bytes()) {
        destroy(p);
        return cudaErrorNotSupported;
      }
      p.algo = algo;
      it = plans_.emplace(shape, p).first;
      return run_plan(it->second, x, w, y, stream);
    }
    if (const cudaError_t e = make_plan(shape, p, 1, candidates); e != cudaSuccess) return e;
    it = plans_.emplace(shape, p).first;
  }
  return run_plan(it->second, x, w, y, stream);
}

cudaError_t GemmBf16::run_plan(const Plan& p, const __nv_bfloat16* x, const __nv_bfloat16* w,
                               void* y, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  last_status_ = cublasLtMatmul(handle_, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c,
                                &p.algo, workspace_.get(), workspace_.bytes(), stream);
  return last_status_ == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace sy::cuda
