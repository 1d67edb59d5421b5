#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/delay.cuh"

namespace sy::cuda {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void delay_kernel(uint64_t ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < ns) __nanosleep(1000);
}

}  // namespace

cudaError_t delay(uint64_t ns, cudaStream_t stream) {
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  return launch_status();
}

}  // namespace sy::cuda
