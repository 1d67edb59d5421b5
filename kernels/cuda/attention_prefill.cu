// paged_prefill_attention: causal attention of any mix of query rows (prefill chunks,
// decode rows) against their sequences' paged KV cache, flash-style.
//
// Grid (query tile, head, sequence); query tiles run longest first. A CTA holds kRowsCta
// query rows of one head; each warp owns 16·MT of them. Key/value tiles of kKeysTile
// tokens come through the block table into shared memory (cp.async, double-buffered,
// rows swizzled so ldmatrix is free of bank conflicts); S = Q·Kᵀ and O += P·V run on
// tensor cores (mma.m16n8k16 bf16, fp32 accumulate) with the online softmax in registers.
// Each row attends to keys [0, min(position + 1, context)), so a chunk also reads the
// prefix blocks cached by earlier steps.
#include <algorithm>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_prefill_wgmma.cuh"

namespace sy::cuda {
namespace {

using attn::FastDiv;

constexpr int kKeysTile = 64;

template <int D, int MT, int NW>
struct PrefillShape {
  static constexpr int kThreads = NW * 32;
  static constexpr int kRowsCta = 16 * MT * NW;
  static constexpr int kDimPad = D < 16 ? 16 : D;  // the mma's k is 16: pad with zeros
  static constexpr int kChunks = kDimPad / 8;      // 16-byte chunks per row
  static constexpr int kKSteps = kDimPad / 16;
  static constexpr int kKeyTiles = kKeysTile / 8;  // n-tiles of S
  static constexpr int kDimTiles = kDimPad / 8;    // n-tiles of O
  static constexpr bool kQInRegs = MT == 1;        // else reloaded from smem (registers)
  static constexpr size_t kSmemBytes = (kRowsCta + 4 * kKeysTile) * kDimPad * 2;
};

template <typename S>
__device__ __forceinline__ int swz(int row, int c) {
  return attn::swizzled<S::kChunks>(row, c);
}

template <int D, int MT, int NW>
__global__ void __launch_bounds__(NW * 32) prefill_kernel(PagedAttentionArgs a, FastDiv bs) {
  using S = PrefillShape<D, MT, NW>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* q_sm = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* k_sm = q_sm + S::kRowsCta * S::kDimPad;  // 2 stages
  __nv_bfloat16* v_sm = k_sm + 2 * kKeysTile * S::kDimPad;
  __shared__ int lim_lo, lim_hi;
  __shared__ int64_t key_rows[2][kKeysTile];  // cache row of each key of a tile, -1 past the end

  const int seq = blockIdx.z, head = blockIdx.y;
  const int qtile = gridDim.x - 1 - blockIdx.x;  // the longest rows first
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int row_begin = a.cu_seqlens[seq], row_end = a.cu_seqlens[seq + 1];
  const int row0 = row_begin + qtile * S::kRowsCta;
  if (row0 >= row_end) return;
  const int kvh = head / (a.n_heads / a.n_kv_heads);
  const attn::SeqBlocks sb = attn::seq_blocks(a, seq);

  // Keys a row sees: [0, lim); the CTA walks key tiles up to the largest lim and masks
  // from the smallest.
  if (tid == 0) lim_lo = INT32_MAX, lim_hi = 0;
  __syncthreads();
  for (int r = tid; r < S::kRowsCta; r += S::kThreads) {
    if (row0 + r < row_end) {
      const int lim = min(a.positions[row0 + r] + 1, sb.context);
      atomicMin(&lim_lo, lim);
      atomicMax(&lim_hi, lim);
    }
  }
  // Query tile (zero rows past the sequence and zero padding dims).
  for (int i = tid; i < S::kRowsCta * S::kChunks; i += S::kThreads) {
    const int r = i / S::kChunks, c = i % S::kChunks;
    const bool valid = row0 + r < row_end && c < D / 8;
    const __nv_bfloat16* src = valid ? a.q + (row0 + r) * a.q_stride + static_cast<int64_t>(head) * D + c * 8 : a.q;
    attn::cp_async16(q_sm + swz<S>(r, c), src, valid);
  }
  __syncthreads();
  const int kv_end = lim_hi, mask_from = lim_lo;
  const int n_tiles = (kv_end + kKeysTile - 1) / kKeysTile;

  // Thread k < kKeysTile looks up key k of a tile in the block table; the copies of the
  // tile's keys read the rows from key_rows.
  auto key_row = [&](int tile) -> int64_t {
    const int j = tile * kKeysTile + tid;
    return j < kv_end ? attn::cache_row(sb, bs, a.n_kv_heads, kvh, j) : -1;
  };
  auto load_kv = [&](int tile) {
    const int stage = tile & 1;
    for (int i = tid; i < kKeysTile * S::kChunks; i += S::kThreads) {
      const int kk = i / S::kChunks, c = i % S::kChunks;
      const int64_t row = key_rows[stage][kk];
      const bool valid = row >= 0 && c < D / 8;
      const int64_t off = valid ? row * D + c * 8 : 0;
      const int soff = stage * kKeysTile * S::kDimPad + swz<S>(kk, c);
      attn::cp_async16(k_sm + soff, a.k_cache + off, valid);
      attn::cp_async16(v_sm + soff, a.v_cache + off, valid);
    }
  };
  if (tid < kKeysTile) key_rows[0][tid] = key_row(0), key_rows[1][tid] = key_row(1);
  __syncthreads();
  if (n_tiles > 0) load_kv(0);
  attn::cp_async_commit();

  // Per-thread row state: rows g and g+8 of each of the warp's MT m-tiles.
  const int g = lane / 4, t = lane % 4;
  const int wrow = warp * 16 * MT;
  int lim[MT][2];
  float m_run[MT][2], l_run[MT][2];
  float o[MT][S::kDimTiles][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + wrow + mt * 16 + g + 8 * h;
      lim[mt][h] = r < row_end ? min(a.positions[r] + 1, sb.context) : 0;
      m_run[mt][h] = -INFINITY;
      l_run[mt][h] = 0.0f;
    }
#pragma unroll
    for (int dn = 0; dn < S::kDimTiles; ++dn)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][dn][e] = 0.0f;
  }

  // ldmatrix lane roles: which row (+0/+8) and which chunk (+0/+1) this lane addresses.
  const int lq = lane / 8, lr = lane % 8;
  auto load_q = [&](uint32_t (&qa)[4], int mt, int ks) {
    attn::ldsm_x4(qa, q_sm + swz<S>(wrow + mt * 16 + (lq & 1) * 8 + lr, ks * 2 + (lq >> 1)));
  };
  uint32_t q_frag[S::kQInRegs ? MT : 1][S::kQInRegs ? S::kKSteps : 1][4];
  const float qk_scale = a.scale * attn::kLog2e;

  for (int tile = 0; tile < n_tiles; ++tile) {
    if (tile + 1 < n_tiles) load_kv(tile + 1);
    attn::cp_async_commit();
    attn::cp_async_wait<1>();
    __syncthreads();
    // The block-table read for tile + 2 starts now and lands in key_rows after the compute.
    const int64_t next_row = tid < kKeysTile && tile + 2 < n_tiles ? key_row(tile + 2) : -1;
    if constexpr (S::kQInRegs) {
      if (tile == 0) {
#pragma unroll
        for (int ks = 0; ks < S::kKSteps; ++ks) load_q(q_frag[0][ks], 0, ks);
      }
    }
    const __nv_bfloat16* kt = k_sm + (tile & 1) * kKeysTile * S::kDimPad;
    const __nv_bfloat16* vt = v_sm + (tile & 1) * kKeysTile * S::kDimPad;

    // S = Q·Kᵀ for the warp's rows and the tile's keys.
    float s[MT][S::kKeyTiles][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < S::kKeyTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < S::kKSteps; ++ks) {
      uint32_t qa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if constexpr (S::kQInRegs) {
#pragma unroll
          for (int e = 0; e < 4; ++e) qa[mt][e] = q_frag[0][ks][e];
        } else {
          load_q(qa[mt], mt, ks);
        }
      }
#pragma unroll
      for (int np = 0; np < S::kKeyTiles / 2; ++np) {
        uint32_t kb[4];
        attn::ldsm_x4(kb, kt + swz<S>(np * 16 + (lq >> 1) * 8 + lr, ks * 2 + (lq & 1)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          attn::mma_bf16(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          attn::mma_bf16(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    // Online softmax (base 2) per row; keys at or past a row's limit are masked.
    const bool masked_tile = (tile + 1) * kKeysTile > mask_from;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float alpha = attn::online_softmax_row<S::kKeyTiles>(
            [&](int nt, int e) -> float& { return s[mt][nt][2 * h + e]; }, masked_tile, tile * kKeysTile, t,
            lim[mt][h], qk_scale, m_run[mt][h], l_run[mt][h]);
#pragma unroll
        for (int dn = 0; dn < S::kDimTiles; ++dn) {
          o[mt][dn][2 * h] *= alpha;
          o[mt][dn][2 * h + 1] *= alpha;
        }
      }
    }

    // O += P·V: S's accumulators of two adjacent key n-tiles are P's A fragment.
#pragma unroll
    for (int kk = 0; kk < kKeysTile / 16; ++kk) {
      uint32_t pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        pa[mt][0] = attn::pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = attn::pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = attn::pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = attn::pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < S::kDimTiles / 2; ++dp) {
        uint32_t vb[4];
        attn::ldsm_x4_trans(vb, vt + swz<S>(kk * 16 + (lq & 1) * 8 + lr, dp * 2 + (lq >> 1)));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          attn::mma_bf16(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          attn::mma_bf16(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
    if (tid < kKeysTile) key_rows[tile & 1][tid] = next_row;  // the rows of tile + 2
    __syncthreads();  // this stage is refilled two tiles on
  }
  attn::cp_async_wait<0>();

  // out = O / l, bf16, rows inside the sequence only.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[mt][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int r = row0 + wrow + mt * 16 + g + 8 * h;
      if (r >= row_end) continue;
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row with no keys gets zeros
      if (a.lse && t == 0) a.lse[static_cast<int64_t>(r) * a.n_heads + head] = attn::natural_lse(m_run[mt][h], qk_scale, l);
      __nv_bfloat16* dst = a.out + static_cast<int64_t>(r) * a.n_heads * D + static_cast<int64_t>(head) * D;
#pragma unroll
      for (int dn = 0; dn < S::kDimTiles; ++dn) {
        const int dim = dn * 8 + 2 * t;
        if (dim < D)
          *reinterpret_cast<uint32_t*>(dst + dim) = attn::pack_bf16x2(o[mt][dn][2 * h] * inv, o[mt][dn][2 * h + 1] * inv);
      }
    }
  }
}

template <int D, int MT, int NW>
cudaError_t launch_prefill(const PagedAttentionArgs& a, int max_q_len, cudaStream_t stream) {
  using S = PrefillShape<D, MT, NW>;
  static std::atomic<uint64_t> smem_set{0};
  if (cudaError_t e = attn::allow_smem(prefill_kernel<D, MT, NW>, S::kSmemBytes, smem_set); e != cudaSuccess)
    return e;
  const dim3 grid((max_q_len + S::kRowsCta - 1) / S::kRowsCta, a.n_heads, a.num_seqs);
  prefill_kernel<D, MT, NW><<<grid, S::kThreads, S::kSmemBytes, stream>>>(a, FastDiv::make(a.block_size));
  return cudaGetLastError();
}

}  // namespace

cudaError_t paged_prefill_attention(const PagedAttentionArgs& a, int max_q_len, int max_context,
                                    cudaStream_t stream) {
  if (cudaError_t e = attn::check_common(a); e != cudaSuccess) return e;
  if (max_q_len < 0 || max_context < 0 || a.num_seqs > 65535 || a.n_heads > 65535) return cudaErrorInvalidValue;
  if (a.num_seqs == 0 || a.num_tokens == 0 || max_q_len == 0) return cudaSuccess;
  if (!a.q || !a.out || !attn::aligned16(a.q) || !attn::aligned16(a.out) || a.q_stride % 8 != 0 ||
      a.q_stride < static_cast<int64_t>(a.n_heads) * a.head_dim)
    return cudaErrorInvalidValue;
  const int rows_per_warp = a.prefill_rows_per_warp;
  if (rows_per_warp != 0 && rows_per_warp != 16 && !(rows_per_warp == 32 && a.head_dim >= 64))
    return cudaErrorInvalidValue;
  if (a.prefill_warps != 0 && a.prefill_warps != 4 && a.prefill_warps != 8) return cudaErrorInvalidValue;
  if (a.prefill_kernel != 0 && a.prefill_kernel != 1) return cudaErrorInvalidValue;
  if (a.prefill_kernel == 1 && a.head_dim == 128) return attn::launch_prefill_wgmma(a, max_q_len, stream);
  const bool eight = a.prefill_warps == 8;
  return attn::dispatch_head_dim(a.head_dim, [&](auto d) -> cudaError_t {
    constexpr int D = decltype(d)::value;
    if constexpr (D >= 64) {
      if (rows_per_warp != 16)
        return eight ? launch_prefill<D, 2, 8>(a, max_q_len, stream) : launch_prefill<D, 2, 4>(a, max_q_len, stream);
    }
    return eight ? launch_prefill<D, 1, 8>(a, max_q_len, stream) : launch_prefill<D, 1, 4>(a, max_q_len, stream);
  });
}

}  // namespace sy::cuda
