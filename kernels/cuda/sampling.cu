// One block per row. Candidates are ranked by a 64-bit key, (logit descending, id
// ascending), so every filter is a prefix of that order and each prefix boundary is
// found by an MSB-first radix select over the key: per 8-bit digit, a histogram of the
// count or probability mass of the keys that share the digits chosen so far, then the
// bucket where the running sum crosses the target.
#include <cmath>

#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/sampling.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kBins = 256;
constexpr uint64_t kAllKeys = ~uint64_t{0};

// float bits mapped so that unsigned order is descending logit order.
__device__ __forceinline__ uint32_t descending_bits(float x) {
  const uint32_t b = __float_as_uint(x);
  const uint32_t ascending = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return ~ascending;
}

struct Row {
  const float* logits;
  double* prob;  // workspace: first the unnormalized weights, then probabilities
  int vocab;
  int id_bits;
  __device__ uint64_t key(int i) const {
    return (static_cast<uint64_t>(descending_bits(logits[i])) << id_bits) |
           static_cast<uint64_t>(i);
  }
  __device__ int id(uint64_t key) const {
    return static_cast<int>(key & ((uint64_t{1} << id_bits) - 1));
  }
};

__device__ __forceinline__ uint64_t shift_right(uint64_t k, int s) {
  return s >= 64 ? 0 : k >> s;
}

__device__ uint64_t block_min(uint64_t v, uint64_t* scratch, bool want_max) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t u = __shfl_xor_sync(0xffffffffu, v, o);
    v = want_max ? max(v, u) : min(v, u);
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const uint64_t none = want_max ? 0 : kAllKeys;
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : none;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t u = __shfl_xor_sync(0xffffffffu, v, o);
    v = want_max ? max(v, u) : min(v, u);
  }
  return v;
}

// Sum of prob over keys ≤ limit.
__device__ double mass_up_to(const Row& r, uint64_t limit, double* scratch) {
  double s = 0;
  for (int i = threadIdx.x; i < r.vocab; i += blockDim.x)
    if (r.key(i) <= limit) s += r.prob[i];
  return block_sum(s, scratch);
}

struct SelectState {
  uint64_t prefix;
  double below;
  bool found;
};

// The smallest key K ≤ limit whose running sum over keys ≤ K reaches target (≥, or >
// when strict); the running sum adds 1 per key (count) or prob. Returns false when the
// whole prefix up to limit stays short of target.
__device__ bool select_key(const Row& r, uint64_t limit, bool count, double target, bool strict,
                           uint64_t* out, double* hist, SelectState* st) {
  const int lane = threadIdx.x & 31;
  const int passes = (32 + r.id_bits + 7) / 8;
  __syncthreads();  // every thread has read the previous selection's result
  if (threadIdx.x == 0) *st = {0, 0.0, true};
  for (int p = passes - 1; p >= 0; --p) {
    const int shift = p * 8;
    for (int j = threadIdx.x; j < kBins; j += blockDim.x) hist[j] = 0;
    __syncthreads();
    const uint64_t prefix = st->prefix;
    // Every lane runs the same number of iterations, so the warp-wide match below sees
    // full warps.
    for (int base = 0; base < r.vocab; base += blockDim.x) {
      const int i = base + threadIdx.x;
      int digit = kBins;
      double val = 0;
      if (i < r.vocab) {
        const uint64_t k = r.key(i);
        if (k <= limit && shift_right(k, shift + 8) == shift_right(prefix, shift + 8)) {
          digit = static_cast<int>((k >> shift) & (kBins - 1));
          val = count ? 1.0 : r.prob[i];
        }
      }
      // Lanes with the same digit add their values first: the top digits of a row of
      // logits fall into few buckets, and one shared atomic per lane would serialize.
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      double sum = 0;
      for (unsigned m = peers; m; m &= m - 1) sum += __shfl_sync(peers, val, __ffs(m) - 1);
      if (digit < kBins && lane == __ffs(peers) - 1) atomicAdd(&hist[digit], sum);
    }
    __syncthreads();
    if (threadIdx.x < 32) {  // warp 0 finds the crossing bucket; lane l owns bins 8l..8l+7
      double local[8], lsum = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) lsum += local[j] = hist[lane * 8 + j];
      double incl = lsum;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
      }
      double excl = __shfl_up_sync(0xffffffffu, incl, 1);
      if (lane == 0) excl = 0;
      const double below = st->below;
      const double reach = below + incl;
      const unsigned crossing =
          __ballot_sync(0xffffffffu, strict ? reach > target : reach >= target);
      if (crossing == 0) {
        if (lane == 0) st->found = false;
      } else if (lane == __ffs(crossing) - 1) {
        double acc = below + excl;
        int d = -1, last_nonzero = 0;
        double acc_last = acc;
        for (int j = 0; j < 8 && d < 0; ++j) {
          const double next = acc + local[j];
          if (strict ? next > target : next >= target) {
            d = j;
          } else {
            if (local[j] > 0) {
              last_nonzero = j;
              acc_last = acc;
            }
            acc = next;
          }
        }
        if (d < 0) {  // the lane total crossed but its running sum, rounded otherwise, did not
          d = last_nonzero;
          acc = acc_last;
        }
        st->prefix = prefix | (static_cast<uint64_t>(lane * 8 + d) << shift);
        st->below = acc;
      }
    }
    __syncthreads();
    if (!st->found) return false;
  }
  *out = st->prefix;
  return true;
}

__global__ void sample_kernel(const float* __restrict__ logits, int vocab, int id_bits,
                              const SamplingRowParams* __restrict__ params,
                              int32_t* __restrict__ out, double* __restrict__ workspace) {
  __shared__ double hist[kBins];
  __shared__ double scratch[32];
  __shared__ uint64_t key_scratch[32];
  __shared__ SelectState st;
  const int64_t row_index = blockIdx.x;
  const SamplingRowParams p = params[row_index];
  const Row r{logits + row_index * vocab, workspace + row_index * vocab, vocab, id_bits};

  uint64_t top = kAllKeys;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) top = min(top, r.key(i));
  top = block_min(top, key_scratch, false);
  if (p.temperature == 0.0f) {
    if (threadIdx.x == 0) out[row_index] = r.id(top);
    return;
  }
  const double inv_t = 1.0 / p.temperature;
  const double mx = static_cast<double>(r.logits[r.id(top)]) * inv_t;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x)
    r.prob[i] = exp(static_cast<double>(r.logits[i]) * inv_t - mx);
  __syncthreads();

  uint64_t limit = kAllKeys;
  if (p.top_k > 0 && p.top_k < vocab)
    select_key(r, kAllKeys, true, static_cast<double>(p.top_k), false, &limit, hist, &st);
  const double z = mass_up_to(r, limit, scratch);
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) r.prob[i] /= z;
  __syncthreads();

  if (p.top_p < 1.0f) {
    uint64_t k;
    if (select_key(r, limit, false, static_cast<double>(p.top_p), false, &k, hist, &st)) limit = k;
  }
  if (p.min_p > 0.0f) {  // the prefix whose probability is at least min_p times the top one
    const double floor = r.prob[r.id(top)] * static_cast<double>(p.min_p);
    uint64_t last = top;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
      const uint64_t k = r.key(i);
      if (k <= limit && r.prob[i] >= floor) last = max(last, k);
    }
    limit = block_min(last, key_scratch, true);
  }
  const double total = mass_up_to(r, limit, scratch);
  uint64_t chosen = limit;
  select_key(r, limit, false, p.uniform * total, true, &chosen, hist, &st);
  if (threadIdx.x == 0) out[row_index] = r.id(chosen);
}

}  // namespace

size_t sampling_workspace_bytes(int64_t rows, int vocab) {
  return static_cast<size_t>(rows) * static_cast<size_t>(vocab) * sizeof(double);
}

cudaError_t sample(const SampleArgs& a, cudaStream_t stream) {
  if (!a.logits || !a.params || !a.out || a.vocab <= 0 || a.rows < 0 || a.rows > INT32_MAX)
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  if (!a.workspace || a.workspace_bytes < sampling_workspace_bytes(a.rows, a.vocab))
    return cudaErrorInvalidValue;
  int id_bits = 1;
  while (id_bits < 31 && (int64_t{1} << id_bits) < a.vocab) ++id_bits;
  sample_kernel<<<static_cast<unsigned>(a.rows), kThreads, 0, stream>>>(
      a.logits, a.vocab, id_bits, a.params, a.out, static_cast<double*>(a.workspace));
  return launch_status();
}

}  // namespace sy::cuda
