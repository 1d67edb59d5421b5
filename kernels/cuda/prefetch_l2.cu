#include <algorithm>
#include <cstdint>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/prefetch_l2.cuh"

namespace sy::cuda {
namespace {

constexpr size_t kPiece = size_t{64} << 10;  // bytes per prefetch instruction
constexpr int kThreads = 32;
constexpr unsigned kMaxBlocks = 128;

// Issues its prefetches only once the kernel ahead has finished (a GEMV streaming its own
// weight would evict lines fetched earlier) and ends right after: the kernel behind, which
// may already be scheduled, waits for this one alone.
__global__ void __launch_bounds__(kThreads) prefetch_l2_kernel(const char* p, size_t bytes) {
  pdl_release();
  pdl_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads * kPiece;
  for (size_t off = (static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x) * kPiece; off < bytes;
       off += stride) {
    const size_t left = bytes - off;
    const auto size = static_cast<uint32_t>((left < kPiece ? left : kPiece) & ~size_t{15});
    if (size != 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"(size) : "memory");
  }
#endif
}

}  // namespace

cudaError_t prefetch_l2(const void* p, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (!p || reinterpret_cast<uintptr_t>(p) % 16 != 0) return cudaErrorInvalidValue;
  const size_t pieces = (bytes + kPiece - 1) / kPiece;
  const auto blocks = static_cast<unsigned>(std::min<size_t>((pieces + kThreads - 1) / kThreads, kMaxBlocks));
  return launch_kernel(prefetch_l2_kernel, blocks, kThreads, 0, stream, static_cast<const char*>(p), bytes);
}

}  // namespace sy::cuda
