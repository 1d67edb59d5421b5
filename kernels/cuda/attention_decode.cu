// paged_decode_attention: one query row per sequence against its paged KV cache. GQA
// groups of 2 or more with head_dim >= 16 run on tensor cores (attention_decode_mma.cu);
// this file holds the CUDA-core kernel for the rest (head_dim 8, one query head per kv
// head), the split merge and the entry points.
//
// Grid (split, kv head × head chunk, sequence). A CTA streams its share of the context's
// keys and values through shared memory (cp.async, kStages deep) once, for all query
// heads that share the kv head (GQA), and keeps a running softmax per head. With more
// than one split, each CTA leaves its normalized partial output and log-sum-exp in the
// workspace and a second kernel merges them; the grid depends only on the batch shape,
// so the pair can be captured in a CUDA graph and replayed with any context lengths.
#include <algorithm>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_decode_mma.cuh"
#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

using attn::FastDiv;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kStages = 3;
constexpr int kKeysPerThread = 4;  // per tile, in both the QK and the PV phase
constexpr int kMaxSplits = attn::kMaxDecodeSplits;

// Tile geometry for head_dim D: a key row is D/8 16-byte chunks, one per thread, so a
// pass of the CTA covers kThreads / (D/8) keys ("slots") and a tile kKeysPerThread passes.
template <int D>
struct DecodeShape {
  static constexpr int kChunks = D / 8;
  static constexpr int kSlots = kThreads / kChunks;
  static constexpr int kTile = kSlots * kKeysPerThread;
  static constexpr int kStageElems = kTile * D;  // K or V of one stage, bf16 elements
};

template <int HG>
constexpr size_t decode_smem_bytes(int d) {
  const size_t tile = static_cast<size_t>(kThreads / (d / 8)) * kKeysPerThread;
  return kStages * 2 * tile * d * 2   // K and V stages
         + HG * tile * 4              // scores, then probabilities
         + HG * 4 * 3;                // per-head rescale factor, max, sum
}

// Sums V = values per lane over groups of L consecutive lanes, halving the values kept at
// each step (a transposed butterfly): after it, a lane holds the V >> H values starting at
// (its top H group bits) * (V >> H), H = min(log2 V, log2 L), each summed over the group.
template <int O, int N, int V>
__device__ __forceinline__ void butterfly_sum(float (&v)[V], int lane) {
  if constexpr (O >= 1) {
    if constexpr (N > 1) {
      const bool upper = (lane & O) != 0;
#pragma unroll
      for (int k = 0; k < N / 2; ++k) {
        const float send = upper ? v[k] : v[k + N / 2];
        const float keep = upper ? v[k + N / 2] : v[k];
        v[k] = keep + __shfl_xor_sync(0xffffffffu, send, O);
      }
      butterfly_sum<O / 2, N / 2, V>(v, lane);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
      butterfly_sum<O / 2, 1, V>(v, lane);
    }
  }
}

constexpr int ilog2(int x) { return x <= 1 ? 0 : 1 + ilog2(x / 2); }

template <int D, int HG>
__global__ void __launch_bounds__(kThreads) decode_kernel(PagedAttentionArgs a, FastDiv bs, int num_splits,
                                                           int head_chunks, float* part_o, float* part_lse) {
  pdl_wait();
  pdl_release();
  using S = DecodeShape<D>;
  constexpr int L = S::kChunks;
  constexpr int NV = HG * kKeysPerThread;
  constexpr int H = ilog2(NV) < ilog2(L) ? ilog2(NV) : ilog2(L);
  constexpr int NF = NV >> H;  // values a lane holds after the butterfly
  constexpr int HPW = (HG + kWarps - 1) / kWarps;  // heads each warp runs the softmax of

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* k_st = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* v_st = k_st + kStages * S::kStageElems;
  float* scores = reinterpret_cast<float*>(v_st + kStages * S::kStageElems);  // [HG][kTile]
  float* alpha_sm = scores + HG * S::kTile;                                    // [HG]
  float* m_sm = alpha_sm + HG;
  float* l_sm = m_sm + HG;

  const int split = blockIdx.x;
  const int kvh = blockIdx.y / head_chunks;
  const int hchunk = blockIdx.y % head_chunks;
  const int seq = blockIdx.z;
  const int group = a.n_heads / a.n_kv_heads;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int chunk = tid % L, slot = tid / L;

  const int row = seq;  // one query row per sequence: cu_seqlens[s] == s
  const attn::SeqBlocks sb = attn::seq_blocks(a, seq);
  const int ctx = min(a.positions[row] + 1, sb.context);
  const int per_split = ((ctx + num_splits - 1) / num_splits + S::kTile - 1) / S::kTile * S::kTile;
  const int t_begin = split * per_split;
  const int t_end = min(t_begin + per_split, ctx);
  const int head0 = kvh * group + hchunk * HG;
  const int n_valid_heads = min(HG, group - hchunk * HG);
  const int64_t part_base = (static_cast<int64_t>(seq) * num_splits + split) * a.n_heads;

  if (t_begin >= t_end) {  // nothing for this split (short context)
    if (tid < n_valid_heads) {
      if (num_splits > 1) part_lse[part_base + head0 + tid] = -INFINITY;
    }
    if (num_splits == 1) {  // empty context: define the output as zeros
      for (int i = tid; i < n_valid_heads * D; i += kThreads)
        a.out[static_cast<int64_t>(row) * a.n_heads * D + head0 * D + i] = __float2bfloat16(0.0f);
      if (a.lse && tid < n_valid_heads) a.lse[static_cast<int64_t>(row) * a.n_heads + head0 + tid] = -INFINITY;
    }
    return;
  }

  // This thread's 8 dims of each query head, pre-scaled into the base-2 softmax domain.
  float q[HG][8];
  const float qscale = a.scale * attn::kLog2e;
#pragma unroll
  for (int g = 0; g < HG; ++g) {
    if (g < n_valid_heads) {
      const uint4 raw =
          *reinterpret_cast<const uint4*>(a.q + row * a.q_stride + static_cast<int64_t>(head0 + g) * D + chunk * 8);
      attn::unpack8(raw, q[g]);
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] *= qscale;
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) q[g][e] = 0.0f;
    }
  }

  const int ntiles = (t_end - t_begin + S::kTile - 1) / S::kTile;
  // Block ids of this thread's keys in a tile, fetched one tile before their copies are
  // issued so that the block-table read's latency hides behind a tile of compute.
  auto fetch_blocks = [&](int tile, int32_t (&ids)[kKeysPerThread]) {
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      const int j = t_begin + tile * S::kTile + slot + i * S::kSlots;
      ids[i] = tile < ntiles && j < t_end ? sb.blocks[bs.div(j)] : -1;
    }
  };
  auto load_tile = [&](int tile, const int32_t (&ids)[kKeysPerThread]) {
    if (tile >= ntiles) return;
    const int stage = tile % kStages;
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      const int token = slot + i * S::kSlots;
      const uint32_t j = t_begin + tile * S::kTile + token;
      const bool valid = ids[i] >= 0;
      const int64_t crow = (static_cast<int64_t>(ids[i]) * a.n_kv_heads + kvh) * bs.d + (j - bs.div(j) * bs.d);
      const int64_t off = valid ? crow * D + chunk * 8 : 0;
      const int soff = stage * S::kStageElems + token * D + chunk * 8;
      attn::cp_async16(k_st + soff, a.k_cache + off, valid);
      attn::cp_async16(v_st + soff, a.v_cache + off, valid);
    }
  };

  float m_run[HPW], l_run[HPW];
#pragma unroll
  for (int i = 0; i < HPW; ++i) m_run[i] = -INFINITY, l_run[i] = 0.0f;
  float acc[HG][8];
#pragma unroll
  for (int g = 0; g < HG; ++g)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.0f;

  int32_t ids[kKeysPerThread];
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    fetch_blocks(s, ids);
    load_tile(s, ids);
    attn::cp_async_commit();
  }
  fetch_blocks(kStages - 1, ids);
  for (int tile = 0; tile < ntiles; ++tile) {
    attn::cp_async_wait<kStages - 2>();
    __syncthreads();
    load_tile(tile + kStages - 1, ids);
    attn::cp_async_commit();
    fetch_blocks(tile + kStages, ids);
    const int stage = tile % kStages;
    const __nv_bfloat16* kt = k_st + stage * S::kStageElems;
    const __nv_bfloat16* vt = v_st + stage * S::kStageElems;
    const int n_in_tile = t_end - (t_begin + tile * S::kTile);

    // Scores: partial dot products over this thread's 8 dims, summed over the key's lanes.
    float part[NV];
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      float kf[8];
      attn::unpack8(*reinterpret_cast<const uint4*>(kt + (slot + i * S::kSlots) * D + chunk * 8), kf);
#pragma unroll
      for (int g = 0; g < HG; ++g) {
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) s = fmaf(q[g][e], kf[e], s);
        part[i * HG + g] = s;
      }
    }
    butterfly_sum<L / 2, NV, NV>(part, lane);
    // Lanes that differ only below the last halving step hold copies; one of them writes.
    if ((chunk & ((L >> H) - 1)) == 0) {
      const int vb = chunk >> (ilog2(L) - H);
#pragma unroll
      for (int k = 0; k < NF; ++k) {
        const int idx = vb * NF + k;
        const int i = idx / HG, g = idx % HG;
        const int token = slot + i * S::kSlots;
        scores[g * S::kTile + token] = token < n_in_tile ? part[k] : -INFINITY;
      }
    }
    __syncthreads();

    // Online softmax per head: warp w owns heads w, w + kWarps, ...
#pragma unroll
    for (int hi = 0; hi < HPW; ++hi) {
      const int g = warp + hi * kWarps;
      if (g < HG) {
        float* sg = scores + g * S::kTile;
        float mx = -INFINITY;
        for (int t = lane; t < S::kTile; t += 32) mx = fmaxf(mx, sg[t]);
#pragma unroll
        for (int o = 16; o >= 1; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float m_new = fmaxf(m_run[hi], mx);  // finite: every tile holds a valid key
        const float alpha = attn::fast_exp2(m_run[hi] - m_new);
        float sum = 0.0f;
        for (int t = lane; t < S::kTile; t += 32) {
          const float p = attn::fast_exp2(sg[t] - m_new);
          sg[t] = p;
          sum += p;
        }
        sum = warp_sum(sum);
        l_run[hi] = l_run[hi] * alpha + sum;
        m_run[hi] = m_new;
        if (lane == 0) alpha_sm[g] = alpha;
      }
    }
    __syncthreads();

    // acc = acc · alpha + P · V over this thread's keys and 8 dims.
#pragma unroll
    for (int g = 0; g < HG; ++g) {
      const float al = alpha_sm[g];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= al;
    }
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      const int token = slot + i * S::kSlots;
      float vf[8];
      attn::unpack8(*reinterpret_cast<const uint4*>(vt + token * D + chunk * 8), vf);
#pragma unroll
      for (int g = 0; g < HG; ++g) {
        const float p = scores[g * S::kTile + token];
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(p, vf[e], acc[g][e]);
      }
    }
  }
  attn::cp_async_wait<0>();
  __syncthreads();  // the stages are free: reuse them for the cross-slot reduction

  // Sum acc over the slots of a warp (lanes with equal chunk), then over warps.
#pragma unroll
  for (int o = L; o < 32; o *= 2)
#pragma unroll
    for (int g = 0; g < HG; ++g)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], o);
  float* red = reinterpret_cast<float*>(smem_raw);  // [kWarps][HG][D]
  if (lane < L) {
#pragma unroll
    for (int g = 0; g < HG; ++g)
#pragma unroll
      for (int e = 0; e < 8; ++e) red[(warp * HG + g) * D + chunk * 8 + e] = acc[g][e];
  }
#pragma unroll
  for (int hi = 0; hi < HPW; ++hi) {
    const int g = warp + hi * kWarps;
    if (g < HG && lane == 0) m_sm[g] = m_run[hi], l_sm[g] = l_run[hi];
  }
  __syncthreads();
  for (int i = tid; i < n_valid_heads * D; i += kThreads) {
    const int g = i / D, dim = i % D;
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) o += red[(w * HG + g) * D + dim];
    o /= l_sm[g];
    if (num_splits == 1) {
      a.out[static_cast<int64_t>(row) * a.n_heads * D + (head0 + g) * D + dim] = __float2bfloat16(o);
      if (a.lse && dim == 0) a.lse[static_cast<int64_t>(row) * a.n_heads + head0 + g] = (m_sm[g] + __log2f(l_sm[g])) * attn::kLn2;
    } else {
      part_o[(part_base + head0 + g) * D + dim] = o;
      if (dim == 0) part_lse[part_base + head0 + g] = m_sm[g] + __log2f(l_sm[g]);
    }
  }
}

// out = Σ_s 2^(lse_s − lse) · o_s over the splits that saw keys, lse = log2 Σ_s 2^lse_s
// (a.lse, when given, gets it in natural log).
// One CTA per (head, sequence): each thread sums 4 dims over every kMergeGroups-th split,
// so the partials stream in with many loads in flight, then the groups are added.
constexpr int kMergeThreads = 256;
template <int D>
__global__ void __launch_bounds__(kMergeThreads) merge_kernel(PagedAttentionArgs a, int num_splits,
                                                              const float* part_o, const float* part_lse) {
  pdl_wait();
  pdl_release();
  constexpr int kVecs = D / 4;
  constexpr int kGroups = kMergeThreads / kVecs;
  __shared__ float w_sm[kMaxSplits];
  __shared__ float4 sum_sm[kGroups][kVecs];
  const int head = blockIdx.x, seq = blockIdx.y, tid = threadIdx.x;
  const int64_t base = static_cast<int64_t>(seq) * num_splits * a.n_heads + head;
  if (tid < num_splits) w_sm[tid] = part_lse[base + static_cast<int64_t>(tid) * a.n_heads];
  __syncthreads();
  float mx = -INFINITY;
  for (int s = 0; s < num_splits; ++s) mx = fmaxf(mx, w_sm[s]);
  __syncthreads();
  if (tid < num_splits) w_sm[tid] = mx == -INFINITY ? 0.0f : attn::fast_exp2(w_sm[tid] - mx);  // 0 for empty splits
  __syncthreads();
  const int vec = tid % kVecs, group = tid / kVecs;
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
  for (int s = group; s < num_splits; s += kGroups) {
    const float w = w_sm[s];
    if (w == 0.0f) continue;  // its partial was never written
    const float4 o = *reinterpret_cast<const float4*>(part_o + (base + static_cast<int64_t>(s) * a.n_heads) * D + vec * 4);
    acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
  }
  sum_sm[group][vec] = acc;
  __syncthreads();
  if (group != 0) return;
  float den = 0.0f;
  for (int s = 0; s < num_splits; ++s) den += w_sm[s];
  for (int gi = 1; gi < kGroups; ++gi) {
    const float4 o = sum_sm[gi][vec];
    acc.x += o.x, acc.y += o.y, acc.z += o.z, acc.w += o.w;
  }
  const float inv = den > 0.0f ? 1.0f / den : 0.0f;
  uint2 packed;
  packed.x = attn::pack_bf16x2(acc.x * inv, acc.y * inv);
  packed.y = attn::pack_bf16x2(acc.z * inv, acc.w * inv);
  *reinterpret_cast<uint2*>(a.out + static_cast<int64_t>(seq) * a.n_heads * D + head * D + vec * 4) = packed;
  if (a.lse && tid == 0) a.lse[static_cast<int64_t>(seq) * a.n_heads + head] = den > 0.0f ? (mx + __log2f(den)) * attn::kLn2 : -INFINITY;
}

template <int D, int HG>
cudaError_t launch_decode(const PagedAttentionArgs& a, int num_splits, float* part_o, float* part_lse,
                          cudaStream_t stream) {
  const size_t smem = decode_smem_bytes<HG>(D);
  static std::atomic<uint64_t> smem_set{0};
  if (cudaError_t e = attn::allow_smem(decode_kernel<D, HG>, smem, smem_set); e != cudaSuccess) return e;
  const int group = a.n_heads / a.n_kv_heads;
  const int head_chunks = (group + HG - 1) / HG;
  const dim3 grid(num_splits, a.n_kv_heads * head_chunks, a.num_seqs);
  return launch_kernel(decode_kernel<D, HG>, grid, kThreads, smem, stream, a, FastDiv::make(a.block_size),
                       num_splits, head_chunks, part_o, part_lse);
}

}  // namespace

size_t attention_workspace_bytes(int max_tokens, int n_heads, int head_dim, int max_splits) {
  if (max_tokens <= 0 || n_heads <= 0 || head_dim <= 0 || max_splits <= 1) return 0;
  return static_cast<size_t>(max_tokens) * max_splits * n_heads * (head_dim + 1) * sizeof(float);
}

int decode_num_splits(int num_seqs, int n_kv_heads, int num_sms) {
  // About two CTAs per SM in one wave (the tensor-core kernel fits two per SM), so that a
  // batch of one long sequence still streams its cache through every SM.
  const int ctas = std::max(1, num_seqs) * std::max(1, n_kv_heads);
  const int want = (2 * std::max(1, num_sms) + ctas - 1) / ctas;
  return std::clamp(want, 1, kMaxSplits);
}

cudaError_t paged_decode_attention(const PagedAttentionArgs& a, int num_splits, cudaStream_t stream) {
  if (cudaError_t e = attn::check_common(a); e != cudaSuccess) return e;
  if (num_splits < 1 || num_splits > kMaxSplits || a.num_tokens != a.num_seqs || a.num_seqs > 65535)
    return cudaErrorInvalidValue;
  if (a.num_seqs == 0) return cudaSuccess;
  if (!a.q || !a.out || !attn::aligned16(a.q) || !attn::aligned16(a.out) || a.q_stride % 8 != 0 ||
      a.q_stride < static_cast<int64_t>(a.n_heads) * a.head_dim)
    return cudaErrorInvalidValue;
  if (num_splits > 1 && (!a.workspace || a.workspace_bytes < attention_workspace_bytes(a.num_seqs, a.n_heads,
                                                                                        a.head_dim, num_splits)))
    return cudaErrorInvalidValue;
  const int group = a.n_heads / a.n_kv_heads;
  const bool mma_fits = group >= 2 && a.head_dim >= 16;
  if (a.decode_variant < 0 || a.decode_variant > 2 || (a.decode_variant == 2 && !mma_fits)) return cudaErrorInvalidValue;
  float* part_o = static_cast<float*>(a.workspace);
  float* part_lse = part_o + static_cast<size_t>(a.num_seqs) * num_splits * a.n_heads * a.head_dim;
  return attn::dispatch_head_dim(a.head_dim, [&](auto d) -> cudaError_t {
    constexpr int D = decltype(d)::value;
    cudaError_t e;
    if (mma_fits && a.decode_variant != 1)
      e = attn::launch_decode_mma(a, num_splits, part_o, part_lse, stream);
    else if (group <= 1) e = launch_decode<D, 1>(a, num_splits, part_o, part_lse, stream);
    else if (group <= 2) e = launch_decode<D, 2>(a, num_splits, part_o, part_lse, stream);
    else if (group <= 4) e = launch_decode<D, 4>(a, num_splits, part_o, part_lse, stream);
    else e = launch_decode<D, 8>(a, num_splits, part_o, part_lse, stream);
    if (e != cudaSuccess || num_splits == 1) return e;
    return launch_kernel(merge_kernel<D>, dim3(a.n_heads, a.num_seqs), kMergeThreads, 0, stream, a, num_splits,
                         part_o, part_lse);
  });
}

}  // namespace sy::cuda
