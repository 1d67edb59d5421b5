#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"

#include <algorithm>

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
  pdl_wait();
  pdl_release();
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

// Variant 0: a row is cut into up to kMaxSplit slices of at least kSliceMin logits, one
// block each (a decode step's one row kept a single block walking 128K values: ≈48 µs on
// the H200). A candidate is one 64-bit key, larger is better: the value's bits made
// order-preserving as an unsigned number, then the complement of the index (smaller
// index wins a tie); 0 is "none" (NaN or an empty slice).
constexpr int kSplitThreads = 256;
constexpr int kMaxSplit = 32;
constexpr int kSliceMin = 4096;

__device__ __forceinline__ unsigned long long candidate(float v, int i) {
  if (isnan(v)) return 0ull;
  const uint32_t u = __float_as_uint(v + 0.0f);  // -0 as +0: they tie, as in a float compare
  const uint32_t ordered = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(ordered) << 32) |
         (0xffffffffu - static_cast<uint32_t>(i));
}

__device__ __forceinline__ unsigned long long block_max(unsigned long long key) {
  __shared__ unsigned long long s_key[kSplitThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
    key = other > key ? other : key;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) s_key[warp] = key;
  __syncthreads();
  key = lane < kSplitThreads / 32 ? s_key[lane] : 0ull;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
    key = other > key ? other : key;
  }
  return key;  // valid in warp 0
}

// Workspace: one record per row, kMaxSplit candidates then the row's counter (in a
// 64-bit slot), so a row's counter sits at the same place whatever a call's row count
// (a layout that put all counters after all candidates moved them with the row count:
// a call with more rows wrote candidates over a smaller call's counters).
constexpr int kRecord = kMaxSplit + 1;  // 64-bit slots per row

// Grid (slices, rows).
__global__ void __launch_bounds__(kSplitThreads)
    argmax_split_kernel(const float* __restrict__ logits, int vocab, int64_t row_stride, int index_offset, int slice,
                        int32_t* __restrict__ out, unsigned long long* __restrict__ keys,
                        unsigned long long* __restrict__ records) {
  pdl_wait();
  pdl_release();
  __shared__ bool last;
  const int64_t row = blockIdx.y;
  const float* r = logits + row * row_stride;
  const int begin = blockIdx.x * slice, end = min(begin + slice, vocab);
  unsigned long long key = 0ull;
  for (int i = begin + threadIdx.x; i < end; i += kSplitThreads) {
    const unsigned long long k = candidate(r[i], index_offset + i);
    key = k > key ? k : key;
  }
  key = block_max(key);
  unsigned long long* cand = records + row * kRecord;
  auto* counter = reinterpret_cast<unsigned int*>(cand + kMaxSplit);
  if (threadIdx.x == 0) {
    cand[blockIdx.x] = key;
    __threadfence();  // the candidate is visible before the block counts itself
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (last) *counter = 0;  // ready for the next launch
  }
  __syncthreads();
  if (!last || threadIdx.x >= 32) return;
  __threadfence();
  key = threadIdx.x < gridDim.x ? __ldcg(cand + threadIdx.x) : 0ull;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
    key = other > key ? other : key;
  }
  if (threadIdx.x != 0) return;
  if (keys)
    keys[row] = key;
  else
    out[row] = key == 0ull ? 0 : static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(key));
}

// One thread per row: the best of the shards' keys.
__global__ void merge_keys_kernel(const unsigned long long* __restrict__ keys, int shards, int64_t rows,
                                  int32_t* __restrict__ out) {
  pdl_wait();
  pdl_release();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  unsigned long long key = 0ull;
  for (int s = 0; s < shards; ++s) {
    const unsigned long long k = keys[s * rows + row];
    key = k > key ? k : key;
  }
  out[row] = key == 0ull ? 0 : static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(key));
}

}  // namespace

size_t argmax_workspace_bytes(int64_t rows) {
  return rows <= 0 ? 0 : static_cast<size_t>(rows) * kRecord * sizeof(unsigned long long);
}

cudaError_t argmax(const ArgmaxArgs& a, cudaStream_t stream) {
  const int64_t row_stride = a.row_stride ? a.row_stride : a.vocab;
  if (!a.logits || (!a.out && !a.keys) || a.vocab <= 0 || a.rows < 0 || a.rows > INT32_MAX || a.variant < 0 ||
      a.variant > 1 || (a.variant == 0 && (!a.workspace || a.rows > 65535)) || row_stride < a.vocab ||
      a.index_offset < 0 || (a.variant == 1 && (row_stride != a.vocab || a.index_offset != 0 || a.keys)))
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  if (a.variant == 1)
    return launch_kernel(argmax_kernel, static_cast<unsigned>(a.rows), kThreads, 0, stream,
                         a.logits, a.vocab, a.out);
  const int slices =
      static_cast<int>(std::clamp<int64_t>(ceil_div(int64_t{a.vocab}, kSliceMin), 1, kMaxSplit));
  const int slice = static_cast<int>(ceil_div(int64_t{a.vocab}, slices));
  return launch_kernel(argmax_split_kernel,
                       dim3(static_cast<unsigned>(slices), static_cast<unsigned>(a.rows)),
                       kSplitThreads, 0, stream, a.logits, a.vocab, row_stride, a.index_offset, slice, a.out,
                       a.keys, static_cast<unsigned long long*>(a.workspace));
}

cudaError_t argmax_merge_keys(const unsigned long long* keys, int shards, int64_t rows, int32_t* out,
                              cudaStream_t stream) {
  if (!keys || !out || shards < 1 || rows < 0 || rows > INT32_MAX) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  constexpr int kThreadsMerge = 128;
  return launch_kernel(merge_keys_kernel, static_cast<unsigned>(ceil_div(rows, kThreadsMerge)), kThreadsMerge, 0,
                       stream, keys, shards, rows, out);
}

}  // namespace sy::cuda
