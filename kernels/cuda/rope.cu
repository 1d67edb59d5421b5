#include "kernels/cuda/cuda_utils.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/launch.cuh"

namespace sy::cuda {
namespace {

constexpr int kThreads = 128;

// One thread per (head, pair) of a token: every pair of the row rotates at once. Each
// thread computes its own sin and cos (sincosf without fast math: about 1 ulp, like the
// CPU's double cos rounded to float).
__global__ void rope_pairs_kernel(bf16* __restrict__ x, int64_t row_stride, int n_heads,
                                  int head_dim, int half, bool interleaved,
                                  const int32_t* __restrict__ positions,
                                  const float* __restrict__ inv_freq) {
  pdl_wait();
  pdl_release();
  const int p = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (p >= n_heads * half) return;
  const int h = p / half, i = p - h * half;
  const int64_t t = blockIdx.x;
  const float angle = static_cast<float>(positions[t]) * inv_freq[i];
  float s, c;
  sincosf(angle, &s, &c);
  bf16* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  const int ia = interleaved ? 2 * i : i;
  const int ib = interleaved ? 2 * i + 1 : i + half;
  const float x0 = __bfloat162float(v[ia]), x1 = __bfloat162float(v[ib]);
  v[ia] = __float2bfloat16(x0 * c - x1 * s);
  v[ib] = __float2bfloat16(x1 * c + x0 * s);
}

// Four pairs per thread with 16-byte (interleaved) or two 8-byte (rotate-half) accesses:
// the per-pair kernel above moves 2-byte values, which held an 8K-token prefill's RoPE
// at a fifth of the copy rate. Same angles and arithmetic, so the same values.
__global__ void rope_quads_kernel(bf16* __restrict__ x, int64_t row_stride, int n_heads,
                                  int head_dim, int half, bool interleaved,
                                  const int32_t* __restrict__ positions,
                                  const float* __restrict__ inv_freq) {
  pdl_wait();
  pdl_release();
  const int quads = half / 4;
  const int p = static_cast<int>(blockIdx.y * blockDim.x + threadIdx.x);
  if (p >= n_heads * quads) return;
  const int h = p / quads, i0 = 4 * (p - h * quads);
  const int64_t t = blockIdx.x;
  const float pos = static_cast<float>(positions[t]);
  bf16* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  __nv_bfloat162 a[4], b[4];  // interleaved: pair j is a[j]; rotate-half: (a, b) halves
  if (interleaved) {
    *reinterpret_cast<uint4*>(a) = *reinterpret_cast<const uint4*>(v + 2 * i0);
  } else {
    *reinterpret_cast<uint2*>(a) = *reinterpret_cast<const uint2*>(v + i0);
    *reinterpret_cast<uint2*>(b) = *reinterpret_cast<const uint2*>(v + half + i0);
  }
  float x0[4], x1[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (interleaved) {
      x0[j] = __low2float(a[j]), x1[j] = __high2float(a[j]);
    } else {
      const __nv_bfloat16* lo = reinterpret_cast<const __nv_bfloat16*>(a);
      const __nv_bfloat16* hi = reinterpret_cast<const __nv_bfloat16*>(b);
      x0[j] = __bfloat162float(lo[j]), x1[j] = __bfloat162float(hi[j]);
    }
    float s, c;
    sincosf(pos * inv_freq[i0 + j], &s, &c);
    const float r0 = x0[j] * c - x1[j] * s, r1 = x1[j] * c + x0[j] * s;
    x0[j] = r0, x1[j] = r1;
  }
  if (interleaved) {
#pragma unroll
    for (int j = 0; j < 4; ++j) a[j] = __floats2bfloat162_rn(x0[j], x1[j]);
    *reinterpret_cast<uint4*>(v + 2 * i0) = *reinterpret_cast<const uint4*>(a);
  } else {
    __nv_bfloat16* lo = reinterpret_cast<__nv_bfloat16*>(a);
    __nv_bfloat16* hi = reinterpret_cast<__nv_bfloat16*>(b);
#pragma unroll
    for (int j = 0; j < 4; ++j) lo[j] = __float2bfloat16(x0[j]), hi[j] = __float2bfloat16(x1[j]);
    *reinterpret_cast<uint2*>(v + i0) = *reinterpret_cast<const uint2*>(a);
    *reinterpret_cast<uint2*>(v + half + i0) = *reinterpret_cast<const uint2*>(b);
  }
}

// Whether rope_quads_kernel takes the shape: whole quads of pairs, every head's first
// value 16- (interleaved) or 8-byte (rotate-half) aligned.
bool quads_fit(const RopeArgs& a, int half, bool interleaved) {
  const int64_t align = interleaved ? 8 : 4;  // elements
  return half % 4 == 0 && a.row_stride % align == 0 && a.head_dim % align == 0 &&
         reinterpret_cast<uintptr_t>(a.x) % (align * 2) == 0;
}

}  // namespace

cudaError_t rope(const RopeArgs& a, cudaStream_t stream) {
  if (!a.x || !a.positions || !a.inv_freq || a.n_heads <= 0 || a.head_dim <= 0 || a.rot_dim <= 0 ||
      a.rot_dim % 2 != 0 || a.rot_dim > a.head_dim || a.tokens < 0 || a.tokens > INT32_MAX ||
      ceil_div(static_cast<int64_t>(a.n_heads) * (a.rot_dim / 2), kThreads) > 65535)
    return cudaErrorInvalidValue;
  if (a.tokens == 0) return cudaSuccess;
  const int half = a.rot_dim / 2;
  const bool interleaved = a.layout == cpu::RopeLayout::kInterleaved;
  if (quads_fit(a, half, interleaved)) {
    const dim3 grid(
        static_cast<unsigned>(a.tokens),
        static_cast<unsigned>(ceil_div(static_cast<int64_t>(a.n_heads) * (half / 4), kThreads)));
    return launch_kernel(rope_quads_kernel, grid, kThreads, 0, stream, a.x, a.row_stride,
                         a.n_heads, a.head_dim, half, interleaved, a.positions, a.inv_freq);
  }
  const dim3 grid(
      static_cast<unsigned>(a.tokens),
      static_cast<unsigned>(ceil_div(static_cast<int64_t>(a.n_heads) * half, kThreads)));
  return launch_kernel(rope_pairs_kernel, grid, kThreads, 0, stream, a.x, a.row_stride, a.n_heads,
                       a.head_dim, half, interleaved, a.positions, a.inv_freq);
}

}  // namespace sy::cuda
