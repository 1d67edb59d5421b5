#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/cuda_utils.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 1024;

// (value, index) ordered by value descending, then index ascending.
__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
  return v > bv || (v == bv && i < bi);
}

// One block per row.
__global__ void argmax_kernel(const float* __restrict__ logits, int vocab,
                              int32_t* __restrict__ out) {
  __shared__ float s_val[32];
  __shared__ int s_idx[32];
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  float best = -INFINITY;
  int best_i = vocab;  // "none yet": loses every tie against a real index
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float v = row[i];
    if (better(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, best, o);
    const int i = __shfl_xor_sync(0xffffffffu, best_i, o);
    if (better(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_val[warp] = best;
    s_idx[warp] = best_i;
  }
  __syncthreads();
  if (warp != 0) return;
  best = lane < (blockDim.x >> 5) ? s_val[lane] : -INFINITY;
  best_i = lane < (blockDim.x >> 5) ? s_idx[lane] : vocab;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, best, o);
    const int i = __shfl_xor_sync(0xffffffffu, best_i, o);
    if (better(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
  if (lane == 0) out[blockIdx.x] = best_i < vocab ? best_i : 0;
}

}  // namespace

cudaError_t argmax(const ArgmaxArgs& a, cudaStream_t stream) {
  if (!a.logits || !a.out || a.vocab <= 0 || a.rows < 0 || a.rows > INT32_MAX)
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  argmax_kernel<<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(a.logits, a.vocab, a.out);
  return launch_status();
}

}  // namespace sy::cuda
