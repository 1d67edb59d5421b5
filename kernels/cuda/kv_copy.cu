#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/kv_copy.cuh"

namespace sy::cuda {
namespace {

template <typename T>
__global__ void copy_kv_blocks_kernel(KvCopyArgs a) {
  const KvBlockLayout& l = a.layout;
  const int64_t chunks = static_cast<int64_t>(l.layers) * 2;
  const int64_t copy = blockIdx.x / chunks;
  const int64_t part = blockIdx.x % chunks;  // 2·layer + (0 keys | 1 values)
  const int2 pair = a.pairs[copy];
  char* dev = a.cache + part * l.half_bytes + static_cast<size_t>(pair.x) * l.chunk_bytes;
  char* host = a.host + static_cast<size_t>(pair.y) * l.chunk_bytes * chunks + part * l.chunk_bytes;
  const T* src = reinterpret_cast<const T*>(a.to_host ? dev : host);
  T* dst = reinterpret_cast<T*>(a.to_host ? host : dev);
  const size_t n = l.chunk_bytes / sizeof(T);
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

cudaError_t copy_kv_blocks(const KvCopyArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return cudaSuccess;
  const KvBlockLayout& l = a.layout;
  if (l.layers <= 0 || l.chunk_bytes == 0 || !a.cache || !a.host || !a.pairs) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(static_cast<int64_t>(a.n) * l.layers * 2));
  constexpr int kThreads = 256;
  const auto aligned = [&](size_t w) {
    return l.chunk_bytes % w == 0 && l.half_bytes % w == 0 && reinterpret_cast<uintptr_t>(a.cache) % w == 0 &&
           reinterpret_cast<uintptr_t>(a.host) % w == 0;
  };
  if (aligned(16))
    copy_kv_blocks_kernel<uint4><<<grid, kThreads, 0, stream>>>(a);
  else if (aligned(4))
    copy_kv_blocks_kernel<uint32_t><<<grid, kThreads, 0, stream>>>(a);
  else
    copy_kv_blocks_kernel<uint8_t><<<grid, kThreads, 0, stream>>>(a);
  return launch_status();
}

}  // namespace sy::cuda
