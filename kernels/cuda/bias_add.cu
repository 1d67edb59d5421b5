#include "kernels/cuda/bias_add.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void bias_add_kernel(bf16* __restrict__ x, int64_t rows, int64_t cols,
                                int64_t row_stride, const float* __restrict__ bias) {
  pdl_wait();
  pdl_release();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * cols;
       i += stride) {
    const int64_t r = i / cols, c = i % cols;
    bf16& v = x[r * row_stride + c];
    v = __float2bfloat16(__bfloat162float(v) + bias[c]);
  }
}

}  // namespace

cudaError_t bias_add(const BiasAddArgs& a, cudaStream_t stream) {
  if (!a.x || !a.bias || a.rows < 0 || a.cols <= 0 || a.row_stride < a.cols)
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>(ceil_div(a.rows * a.cols, kThreads), 132 * 16);
  return launch_kernel(bias_add_kernel, static_cast<unsigned>(blocks), kThreads, 0, stream, a.x,
                       a.rows, a.cols, a.row_stride, a.bias);
}

}  // namespace sy::cuda
