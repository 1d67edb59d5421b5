// paged_prefill_attention's Hopper kernel (a.prefill_kernel == 1, head_dim 128): the same
// causal attention over the paged KV cache as attention_prefill.cu, on warpgroup MMA
// (wgmma.mma_async, sm_90a).
//
// Grid (head, query tile, sequence): blockIdx.x varies fastest, so every head's longest
// query tile starts before any shorter one. A CTA holds 128 query rows of one head, in
// two warpgroups of 64 rows (wgmma's m64). Key/value tiles of 128 tokens come through the
// block table into shared memory by cp.async, double-buffered, in the layout wgmma reads
// with 128-byte swizzling: each 64-dim half of a row is one 128-byte line, eight lines one
// 1024-byte swizzle atom, the halves one after the other. S = Q·Kᵀ reads Q and K from
// shared memory (both K-major, m64n128k16); O += P·V takes P from registers (the S
// accumulators rounded to bf16, whose layout is the A fragment's) and V from shared
// memory as an N-major operand (the transpose bit), so V needs no transposed copy. The
// online softmax (base 2) runs on the fp32 accumulators, masked only on key tiles that
// reach past the smallest row limit of the CTA.
#include "kernels/cuda/attention_prefill_wgmma.cuh"

#include <atomic>
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_mma.cuh"

// CMake defines it where this file is built for sm_90a (kernels/cuda/CMakeLists.txt).
#ifndef SY_ATTENTION_WGMMA
#define SY_ATTENTION_WGMMA 0
#endif

namespace sy::cuda::attn {
namespace {

constexpr int kDim = 128;
constexpr int kRowsWarpgroup = 64;  // wgmma's m
constexpr int kWarpgroups = 2;
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kRowsCta = kRowsWarpgroup * kWarpgroups;
constexpr int kKeysTile = 128;  // wgmma's n for S
constexpr uint32_t kQBytes = kRowsCta * kDim * 2;
constexpr uint32_t kTileBytes = kKeysTile * kDim * 2;  // K (or V) of one stage
constexpr uint32_t kAtomBytes = 1024;  // 8 lines: the stride between 8-row groups
// The swizzle is a function of address bits 4-9, so the atoms start 1024-byte aligned:
// one more kilobyte lets the kernel align the dynamic shared memory itself.
constexpr size_t kSmemBytes = kAtomBytes + kQBytes + 4 * kTileBytes;

// wgmma exists in the arch-specific sm_90a target only: other device passes (a build for
// more architectures than 90) compile an empty kernel, which the launcher never starts.
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kChunks = kDim / 8;  // 16-byte chunks per row
constexpr int kLineBytes = 128;    // one swizzle line: 64 bf16 dims
// [half][rows][128 B] tiles: Q per warpgroup, and K and V per stage.
constexpr uint32_t kQHalfBytes = kRowsWarpgroup * kLineBytes;
constexpr uint32_t kHalfBytes = kKeysTile * kLineBytes;

// Byte offset of 16-byte chunk c of `row` in a [2][rows][128 B] tile whose halves are
// half_bytes apart: wgmma's 128-byte swizzle XORs the chunk with the row's place in its
// atom, which also spreads the cp.async writes of a warp over all banks.
__device__ __forceinline__ uint32_t swizzled(int row, int c, uint32_t half_bytes) {
  return (c >> 3) * half_bytes + row * kLineBytes + (((c & 7) ^ (row & 7)) << 4);
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading and stride byte offsets, all >> 4; bits 62-63 = 1 selects 128-byte swizzling.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((addr & 0x3ffff) >> 4) | static_cast<uint64_t>(lead_bytes >> 4) << 16 |
         static_cast<uint64_t>(stride_bytes >> 4) << 32 | uint64_t{1} << 62;
}

#define SY_WGMMA_ACC(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define SY_WGMMA_ACC_REGS \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

// wgmma.fence orders this thread's register writes (P, the rescaled O) before the wgmma
// reading them; commit closes a group, wait_group<N> leaves at most N groups in flight.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving register reads or writes across the wgmma.fence before a
// wgmma, or across the wait after it (the asm operands alone tie them to the issue, not
// to the fence or the completion): volatile asm statements keep their order.
__device__ __forceinline__ void pin(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void pin(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

// d (+)= A·B, m64n128k16, A and B from shared memory, both K-major; accumulate == 0
// overwrites d.
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" SY_WGMMA_ACC_REGS "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : SY_WGMMA_ACC(d)
      : "l"(a), "l"(b), "r"(accumulate));
}
// d += A·B, m64n128k16, A from registers (the m16n8k16 A fragment of each warp's 16 rows),
// B from shared memory N-major.
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" SY_WGMMA_ACC_REGS
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : SY_WGMMA_ACC(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

#endif  // !__CUDA_ARCH__ || __CUDA_ARCH_FEAT_SM90_ALL

__global__ void __launch_bounds__(kThreads, 1) prefill_wgmma_kernel(PagedAttentionArgs a, FastDiv bs) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int lim_lo, lim_hi;
  __shared__ int64_t key_rows[2][kKeysTile];  // cache row of each key of a tile, -1 past the end
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t pad = ((raw + kAtomBytes - 1) & ~(kAtomBytes - 1)) - raw;
  unsigned char* q_sm = smem_raw + pad;   // [warpgroup][half][64 rows][128 B]
  unsigned char* k_sm = q_sm + kQBytes;   // [stage][half][128 keys][128 B]
  unsigned char* v_sm = k_sm + 2 * kTileBytes;

  const int head = blockIdx.x, seq = blockIdx.z;
  const int qtile = gridDim.y - 1 - blockIdx.y;  // the longest rows first
  const int tid = threadIdx.x;
  const int row_begin = a.cu_seqlens[seq], row_end = a.cu_seqlens[seq + 1];
  const int row0 = row_begin + qtile * kRowsCta;
  if (row0 >= row_end) return;
  const int kvh = head / (a.n_heads / a.n_kv_heads);
  const SeqBlocks sb = seq_blocks(a, seq);

  // Keys a row sees: [0, lim); the CTA walks key tiles up to the largest lim and masks
  // from the smallest.
  if (tid == 0) lim_lo = INT32_MAX, lim_hi = 0;
  __syncthreads();
  if (tid < kRowsCta && row0 + tid < row_end) {
    const int lim = min(a.positions[row0 + tid] + 1, sb.context);
    atomicMin(&lim_lo, lim);
    atomicMax(&lim_hi, lim);
  }
  // Query tile, zero past the sequence; warpgroup r / 64 owns row r.
  for (int i = tid; i < kRowsCta * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < row_end;
    const __nv_bfloat16* src = valid ? a.q + (row0 + r) * a.q_stride + static_cast<int64_t>(head) * kDim + c * 8 : a.q;
    cp_async16(q_sm + (r / kRowsWarpgroup) * 2 * kQHalfBytes + swizzled(r % kRowsWarpgroup, c, kQHalfBytes), src,
               valid);
  }
  __syncthreads();
  const int kv_end = lim_hi, mask_from = lim_lo;
  const int n_tiles = (kv_end + kKeysTile - 1) / kKeysTile;

  // Thread k < kKeysTile looks up key k of a tile in the block table; the copies of the
  // tile's keys read the rows from key_rows.
  auto key_row = [&](int tile) -> int64_t {
    const int j = tile * kKeysTile + tid;
    return j < kv_end ? cache_row(sb, bs, a.n_kv_heads, kvh, j) : -1;
  };
  // Consecutive threads copy consecutive chunks of a row; keys past the end are zeros
  // (their scores are masked, and zero values keep 0·v finite).
  auto load_kv = [&](int tile) {
    const int stage = tile & 1;
    for (int i = tid; i < kKeysTile * kChunks; i += kThreads) {
      const int kk = i / kChunks, c = i % kChunks;
      const int64_t row = key_rows[stage][kk];
      const bool valid = row >= 0;
      const int64_t off = valid ? row * kDim + c * 8 : 0;
      const uint32_t soff = stage * kTileBytes + swizzled(kk, c, kHalfBytes);
      cp_async16(k_sm + soff, a.k_cache + off, valid);
      cp_async16(v_sm + soff, a.v_cache + off, valid);
    }
  };
  if (tid < kKeysTile) key_rows[0][tid] = key_row(0), key_rows[1][tid] = key_row(1);
  __syncthreads();
  if (n_tiles > 0) load_kv(0);
  cp_async_commit();

  // This thread's rows in the wgmma accumulator layout: warp w of the warpgroup holds rows
  // 16w..16w+15, lane 4g+t rows g and g+8, columns 8j+2t and 8j+2t+1 of each 8-column
  // slice j, in registers 4j..4j+3 (as mma.m16n8k16's C fragment, slice by slice).
  const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  int lim[2];
  float m_run[2], l_run[2];
  float o[64];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row0 + wg * kRowsWarpgroup + warp * 16 + g + 8 * h;
    lim[h] = r < row_end ? min(a.positions[r] + 1, sb.context) : 0;
    m_run[h] = -INFINITY;
    l_run[h] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  const float qk_scale = a.scale * kLog2e;
  const uint32_t q_addr = smem_addr(q_sm) + wg * 2 * kQHalfBytes;

  for (int tile = 0; tile < n_tiles; ++tile) {
    // This tile's copies are done (and, through the proxy fence, visible to wgmma, which
    // reads shared memory through the async proxy) and both warpgroups are past the
    // previous tile, whose stage the next copies overwrite.
    cp_async_wait<0>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (tile + 1 < n_tiles) load_kv(tile + 1);
    cp_async_commit();
    // The block-table read for tile + 2 starts now and lands in key_rows after the compute.
    const int64_t next_row = tid < kKeysTile && tile + 2 < n_tiles ? key_row(tile + 2) : -1;
    const uint32_t k_addr = smem_addr(k_sm) + (tile & 1) * kTileBytes;
    const uint32_t v_addr = smem_addr(v_sm) + (tile & 1) * kTileBytes;

    // S = Q·Kᵀ: eight k-steps of 16 dims; a step moves 32 bytes along the 128-byte lines
    // (the hardware swizzles the computed addresses), the fifth goes to the second half.
    float s[64];
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kDim / 16; ++ks) {
      const uint32_t step = (ks & 3) * 32;
      wgmma_ss(s, smem_desc(q_addr + (ks >> 2) * kQHalfBytes + step, 16, kAtomBytes),
               smem_desc(k_addr + (ks >> 2) * kHalfBytes + step, 16, kAtomBytes), ks);
    }
    wgmma_commit();
    wgmma_wait<0>();
    pin(s);

    // Online softmax (base 2) per row; keys at or past a row's limit are masked.
    const bool masked_tile = (tile + 1) * kKeysTile > mask_from;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float alpha = online_softmax_row<kKeysTile / 8>(
          [&](int j, int e) -> float& { return s[4 * j + 2 * h + e]; }, masked_tile, tile * kKeysTile, t,
          lim[h], qk_scale, m_run[h], l_run[h]);
#pragma unroll
      for (int j = 0; j < kDim / 8; ++j) {
        o[4 * j + 2 * h] *= alpha;
        o[4 * j + 2 * h + 1] *= alpha;
      }
    }

    // O += P·V: the S accumulators of key slices 2kk and 2kk+1 are P's A fragment for
    // keys 16kk..16kk+15; V's rows of those keys are two 8-row groups one atom apart, its
    // dims two halves kHalfBytes apart.
    uint32_t p[kKeysTile / 16][4];
#pragma unroll
    for (int kk = 0; kk < kKeysTile / 16; ++kk) {
      p[kk][0] = pack_bf16x2(s[8 * kk + 0], s[8 * kk + 1]);
      p[kk][1] = pack_bf16x2(s[8 * kk + 2], s[8 * kk + 3]);
      p[kk][2] = pack_bf16x2(s[8 * kk + 4], s[8 * kk + 5]);
      p[kk][3] = pack_bf16x2(s[8 * kk + 6], s[8 * kk + 7]);
    }
    pin(o);
    pin(p);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kKeysTile / 16; ++kk)
      wgmma_rs(o, p[kk], smem_desc(v_addr + kk * 2 * kAtomBytes, kHalfBytes, kAtomBytes));
    wgmma_commit();
    wgmma_wait<0>();
    pin(o);
    if (tid < kKeysTile) key_rows[tile & 1][tid] = next_row;  // the rows of tile + 2
  }
  cp_async_wait<0>();

  // out = O / l, bf16, rows inside the sequence only.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_run[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int r = row0 + wg * kRowsWarpgroup + warp * 16 + g + 8 * h;
    if (r >= row_end) continue;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row with no keys gets zeros
    if (a.lse && t == 0) a.lse[static_cast<int64_t>(r) * a.n_heads + head] = natural_lse(m_run[h], qk_scale, l);
    __nv_bfloat16* dst = a.out + static_cast<int64_t>(r) * a.n_heads * kDim + static_cast<int64_t>(head) * kDim;
#pragma unroll
    for (int j = 0; j < kDim / 8; ++j)
      *reinterpret_cast<uint32_t*>(dst + 8 * j + 2 * t) = pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
  }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

}  // namespace

cudaError_t launch_prefill_wgmma(const PagedAttentionArgs& a, int max_q_len, cudaStream_t stream) {
  if (a.head_dim != kDim) return cudaErrorInvalidValue;
  if (!prefill_wgmma_available()) return cudaErrorNotSupported;
  const int q_tiles = (max_q_len + kRowsCta - 1) / kRowsCta;
  if (q_tiles > 65535) return cudaErrorInvalidValue;
  static std::atomic<uint64_t> smem_set{0};
  if (cudaError_t e = allow_smem(prefill_wgmma_kernel, kSmemBytes, smem_set); e != cudaSuccess) return e;
  const dim3 grid(a.n_heads, q_tiles, a.num_seqs);
  prefill_wgmma_kernel<<<grid, kThreads, kSmemBytes, stream>>>(a, FastDiv::make(a.block_size));
  return cudaGetLastError();
}

}  // namespace sy::cuda::attn

namespace sy::cuda {

bool prefill_wgmma_available() {
  if (!SY_ATTENTION_WGMMA) return false;
  int dev = 0, major = 0, minor = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
         minor == 0;
}

}  // namespace sy::cuda
