#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/peer_collective.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 256;
// Elements per CTA before another CTA is worth its flag round.
constexpr int64_t kElementsPerBlock = 4096;

__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Flag round `round` of CTA b: after it, every rank's CTA b has finished what it did
// before its own call (the block's writes are published by the system fence).
__device__ void flag_round(const PeerCollectiveArgs& a, int round, uint32_t seq) {
  __syncthreads();
  if (threadIdx.x < a.size) {
    const int j = threadIdx.x;
    const size_t slot = (static_cast<size_t>(round) * kPeerMaxBlocks + blockIdx.x) * kPeerMaxRanks;
    __threadfence_system();
    store_release_sys(a.flags[j] + slot + a.rank, seq);
    const uint32_t* mine = a.flags[a.rank] + slot + j;
    const uint64_t deadline = now_ns() + uint64_t{kPeerTimeoutSeconds} * 1000000000ull;
    while (load_acquire_sys(mine) != seq) {
      if (now_ns() > deadline) __trap();  // a peer never came: fail loudly, never hang
    }
  }
  __syncthreads();
}

// Reads every rank's staging buffer over this CTA's range and writes `out`.
__device__ void combine(const PeerCollectiveArgs& a, int64_t i0, int64_t i1) {
  switch (a.op) {
    case PeerOp::kSum:
      for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) {
        float acc = __ldcg(a.staging[0] + i);
        for (int j = 1; j < a.size; ++j) acc = __fadd_rn(acc, __ldcg(a.staging[j] + i));
        a.out[i] = acc;
      }
      break;
    case PeerOp::kGather:
      for (int j = 0; j < a.size; ++j)
        for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x)
          a.out[j * a.out_rank_stride + i] = __ldcg(a.staging[j] + i);
      break;
    case PeerOp::kBroadcast:
      for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) a.out[i] = __ldcg(a.staging[a.root] + i);
      break;
  }
}

__global__ void peer_collective_kernel(PeerCollectiveArgs a) {
  __shared__ uint32_t seq;
  const int64_t per = (a.n + gridDim.x - 1) / gridDim.x;
  const int64_t i0 = blockIdx.x * per, i1 = min(a.n, i0 + per);
  if (a.staged) {
    combine(a, i0, i1);
    return;
  }
  float* mine = a.staging[a.rank];
  if (a.op != PeerOp::kBroadcast || a.rank == a.root)
    for (int64_t i = i0 + threadIdx.x; i < i1; i += blockDim.x) mine[i] = a.in[i];
  if (threadIdx.x == 0) {
    seq = a.counters[blockIdx.x] + 1;
    a.counters[blockIdx.x] = seq;
  }
  __syncthreads();  // every flag thread reads seq
  flag_round(a, 0, seq);
  combine(a, i0, i1);
  flag_round(a, 1, seq);
}

}  // namespace

cudaError_t peer_collective(const PeerCollectiveArgs& a, cudaStream_t stream) {
  if (a.size < 1 || a.size > kPeerMaxRanks || a.rank < 0 || a.rank >= a.size || a.n < 0 || (!a.staged && !a.counters) ||
      (a.op == PeerOp::kBroadcast && (a.root < 0 || a.root >= a.size)) ||
      (a.n > 0 && (!a.in || !a.out)) || (a.op == PeerOp::kGather && a.out_rank_stride < a.n))
    return cudaErrorInvalidValue;
  for (int j = 0; j < a.size; ++j)
    if (!a.staging[j] || (!a.staged && !a.flags[j])) return cudaErrorInvalidValue;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(kPeerMaxBlocks, std::max<int64_t>(1, ceil_div(a.n, kElementsPerBlock))));
  peer_collective_kernel<<<blocks, kThreads, 0, stream>>>(a);
  return launch_status();
}

}  // namespace sy::cuda
