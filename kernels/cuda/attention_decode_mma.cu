// The tensor-core decode kernel (GQA groups of 2 or more, head_dim >= 16): the query
// heads that share a kv head are the rows of one 16-row mma tile, so S = Q·Kᵀ and
// O += P·V run as mma.m16n8k16 and the CTA's arithmetic stays far below the time its
// keys and values take to stream in. Grid and split-K contract as the CUDA-core kernel
// (attention_decode.cu), which also merges the splits.
//
// Each of the 4 warps takes 16 keys of every 64-key tile with its own running softmax;
// the warps' states are merged through shared memory at the end.
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_decode_mma.cuh"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda::attn {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;  // query heads per CTA
constexpr int kTile = 64;  // keys per stage, 16 per warp
constexpr int kStages = 3;

template <int D>
struct MmaDecodeShape {
  static constexpr int kChunks = D / 8;
  static constexpr int kKSteps = D / 16;
  static constexpr int kDimTiles = D / 8;
  static constexpr int kStageElems = kTile * D;
  static constexpr size_t kSmemBytes = (kRows * D + 2 * kStages * kStageElems) * 2;
};

template <int D>
__global__ void __launch_bounds__(kThreads) decode_mma_kernel(PagedAttentionArgs a, FastDiv bs, int num_splits,
                                                               int head_chunks, float* part_o, float* part_lse) {
  using S = MmaDecodeShape<D>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* q_sm = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* k_st = q_sm + kRows * D;
  __nv_bfloat16* v_st = k_st + kStages * S::kStageElems;
  __shared__ int64_t key_rows[kStages][kTile];  // cache row of each key of a stage, -1 past the end

  const int split = blockIdx.x;
  const int kvh = blockIdx.y / head_chunks;
  const int hchunk = blockIdx.y % head_chunks;
  const int seq = blockIdx.z, row = seq;  // one query row per sequence
  const int group = a.n_heads / a.n_kv_heads;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const SeqBlocks sb = seq_blocks(a, seq);
  const int ctx = min(a.positions[row] + 1, sb.context);
  const int per_split = ((ctx + num_splits - 1) / num_splits + kTile - 1) / kTile * kTile;
  const int t_begin = split * per_split;
  const int t_end = min(t_begin + per_split, ctx);
  const int head0 = kvh * group + hchunk * kRows;
  const int n_valid = min(kRows, group - hchunk * kRows);
  const int64_t part_base = (static_cast<int64_t>(seq) * num_splits + split) * a.n_heads;

  if (t_begin >= t_end) {  // nothing for this split (short context)
    pdl_wait();
    pdl_release();
    if (num_splits > 1 && tid < n_valid) part_lse[part_base + head0 + tid] = -INFINITY;
    if (num_splits == 1) {
      for (int i = tid; i < n_valid * D; i += kThreads)
        a.out[static_cast<int64_t>(row) * a.n_heads * D + head0 * D + i] = __float2bfloat16(0.0f);
      if (a.lse && tid < n_valid) a.lse[static_cast<int64_t>(row) * a.n_heads + head0 + tid] = -INFINITY;
    }
    return;
  }

  const int ntiles = (t_end - t_begin + kTile - 1) / kTile;
  auto key_row = [&](int tile) -> int64_t {  // for thread tid < kTile
    const int j = t_begin + tile * kTile + tid;
    return j < t_end ? cache_row(sb, bs, a.n_kv_heads, kvh, j) : -1;
  };
  auto load_tile = [&](int tile) {
    if (tile >= ntiles) return;
    const int stage = tile % kStages;
    for (int i = tid; i < kTile * S::kChunks; i += kThreads) {
      const int kk = i / S::kChunks, c = i % S::kChunks;
      const int64_t r = key_rows[stage][kk];
      const int64_t off = r >= 0 ? r * D + c * 8 : 0;
      const int soff = stage * S::kStageElems + swizzled<S::kChunks>(kk, c);
      cp_async16(k_st + soff, a.k_cache + off, r >= 0);
      cp_async16(v_st + soff, a.v_cache + off, r >= 0);
    }
  };
  if (tid < kTile) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) key_rows[s][tid] = key_row(s);
  }
  // Everything above read only the step's plan (uploaded before the step's first
  // kernel); the query rows and this layer's cache come from the kernels ahead.
  pdl_wait();
  pdl_release();
  for (int i = tid; i < kRows * S::kChunks; i += kThreads) {
    const int r = i / S::kChunks, c = i % S::kChunks;
    const bool valid = r < n_valid;
    const __nv_bfloat16* src = valid ? a.q + row * a.q_stride + static_cast<int64_t>(head0 + r) * D + c * 8 : a.q;
    cp_async16(q_sm + swizzled<S::kChunks>(r, c), src, valid);
  }
  __syncthreads();
  load_tile(0);
  cp_async_commit();  // with the query rows
  load_tile(1);
  cp_async_commit();

  const int g = lane / 4, t = lane % 4, lq = lane / 8, lr = lane % 8;
  const float qk_scale = a.scale * kLog2e;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  float o[S::kDimTiles][4];
#pragma unroll
  for (int dn = 0; dn < S::kDimTiles; ++dn)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[dn][e] = 0.0f;
  uint32_t q_frag[S::kKSteps][4];

  for (int tile = 0; tile < ntiles; ++tile) {
    cp_async_wait<1>();
    __syncthreads();
    if (tile == 0) {
#pragma unroll
      for (int ks = 0; ks < S::kKSteps; ++ks)
        ldsm_x4(q_frag[ks], q_sm + swizzled<S::kChunks>((lq & 1) * 8 + lr, ks * 2 + (lq >> 1)));
    }
    load_tile(tile + 2);
    cp_async_commit();
    // The block-table read for tile + 3 lands in key_rows after this tile's compute.
    const int64_t next_row = tid < kTile ? key_row(tile + 3) : -1;
    const __nv_bfloat16* kt = k_st + (tile % kStages) * S::kStageElems;
    const __nv_bfloat16* vt = v_st + (tile % kStages) * S::kStageElems;
    const int key0 = warp * 16;  // this warp's keys in the tile

    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int ks = 0; ks < S::kKSteps; ++ks) {
      uint32_t kb[4];
      ldsm_x4(kb, kt + swizzled<S::kChunks>(key0 + (lq >> 1) * 8 + lr, ks * 2 + (lq & 1)));
      mma_bf16(s[0], q_frag[ks], kb[0], kb[1]);
      mma_bf16(s[1], q_frag[ks], kb[2], kb[3]);
    }
    const int n_in_tile = t_end - (t_begin + tile * kTile);
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // rows g and g + 8
      const float alpha = online_softmax_row<2>([&](int nt, int e) -> float& { return s[nt][2 * h + e]; },
                                                true, key0, t, n_in_tile, qk_scale, m_run[h], l_run[h]);
#pragma unroll
      for (int dn = 0; dn < S::kDimTiles; ++dn) o[dn][2 * h] *= alpha, o[dn][2 * h + 1] *= alpha;
    }
    uint32_t pa[4];
    pa[0] = pack_bf16x2(s[0][0], s[0][1]);
    pa[1] = pack_bf16x2(s[0][2], s[0][3]);
    pa[2] = pack_bf16x2(s[1][0], s[1][1]);
    pa[3] = pack_bf16x2(s[1][2], s[1][3]);
#pragma unroll
    for (int dp = 0; dp < S::kDimTiles / 2; ++dp) {
      uint32_t vb[4];
      ldsm_x4_trans(vb, vt + swizzled<S::kChunks>(key0 + (lq & 1) * 8 + lr, dp * 2 + (lq >> 1)));
      mma_bf16(o[2 * dp], pa, vb[0], vb[1]);
      mma_bf16(o[2 * dp + 1], pa, vb[2], vb[3]);
    }
    if (tid < kTile) key_rows[(tile + 3) % kStages][tid] = next_row;  // its stage was loaded two tiles ago
  }
  cp_async_wait<0>();
  __syncthreads();  // the stages are free: merge the warps' states there

  float* red_o = reinterpret_cast<float*>(k_st);  // [kWarps][kRows][D]
  float* red_m = red_o + kWarps * kRows * D;       // [kWarps][kRows]
  float* red_l = red_m + kWarps * kRows;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_run[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = g + 8 * h;
    if (t == 0) red_m[warp * kRows + r] = m_run[h], red_l[warp * kRows + r] = l;
#pragma unroll
    for (int dn = 0; dn < S::kDimTiles; ++dn)
      *reinterpret_cast<float2*>(red_o + (warp * kRows + r) * D + dn * 8 + 2 * t) =
          make_float2(o[dn][2 * h], o[dn][2 * h + 1]);
  }
  __syncthreads();
  for (int i = tid; i < n_valid * D; i += kThreads) {
    const int r = i / D, dim = i % D;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, red_m[w * kRows + r]);  // finite: the CTA has keys
    float l = 0.0f, acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float wt = fast_exp2((red_m[w * kRows + r] - m) * qk_scale);
      l += wt * red_l[w * kRows + r];
      acc += wt * red_o[(w * kRows + r) * D + dim];
    }
    if (num_splits == 1) {
      a.out[static_cast<int64_t>(row) * a.n_heads * D + (head0 + r) * D + dim] = __float2bfloat16(acc / l);
      if (a.lse && dim == 0) a.lse[static_cast<int64_t>(row) * a.n_heads + head0 + r] = natural_lse(m, qk_scale, l);
    } else {
      part_o[(part_base + head0 + r) * D + dim] = acc / l;
      if (dim == 0) part_lse[part_base + head0 + r] = m * qk_scale + __log2f(l);
    }
  }
}

template <int D>
cudaError_t launch(const PagedAttentionArgs& a, int num_splits, float* part_o, float* part_lse,
                   cudaStream_t stream) {
  using S = MmaDecodeShape<D>;
  static std::atomic<uint64_t> smem_set{0};
  if (cudaError_t e = allow_smem(decode_mma_kernel<D>, S::kSmemBytes, smem_set); e != cudaSuccess)
    return e;
  const int group = a.n_heads / a.n_kv_heads;
  const int head_chunks = (group + kRows - 1) / kRows;
  const dim3 grid(num_splits, a.n_kv_heads * head_chunks, a.num_seqs);
  return launch_kernel(decode_mma_kernel<D>, grid, kThreads, S::kSmemBytes, stream, a,
                       FastDiv::make(a.block_size), num_splits, head_chunks, part_o, part_lse);
}

}  // namespace

cudaError_t launch_decode_mma(const PagedAttentionArgs& a, int num_splits, float* part_o, float* part_lse,
                              cudaStream_t stream) {
  switch (a.head_dim) {
    case 16: return launch<16>(a, num_splits, part_o, part_lse, stream);
    case 64: return launch<64>(a, num_splits, part_o, part_lse, stream);
    case 128: return launch<128>(a, num_splits, part_o, part_lse, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace sy::cuda::attn
