#include "kernels/cpu/linear.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#if defined(SY_LINEAR_X86)
#include <cpuid.h>
#endif

#include "common/half.h"
#include "kernels/cpu/linear_kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace sy::cpu {
namespace detail {

#if !defined(SY_LINEAR_X86)
const LinearKernels* linear_kernels_avx2(bool) { return nullptr; }
const LinearKernels* linear_kernels_avx512(bool) { return nullptr; }
const LinearKernels* linear_kernels_avx512_vnni(bool) { return nullptr; }
void linear_amx(const XBlockQ8*, int64_t, int64_t, std::span<const WeightSlice>, float*, int64_t, ThreadPool&) {}
void linear_amx_bf16(const uint16_t*, int64_t, int64_t, std::span<const WeightSlice>, float*, int64_t, ThreadPool&) {}
#endif

void for_each_panel(std::span<const WeightSlice> w, int64_t panel, ThreadPool& pool,
                    const std::function<void(const WeightSlice&, int64_t, int64_t)>& fn) {
  struct Task {
    const WeightSlice* s;
    int64_t j0;
  };
  std::vector<Task> tasks;
  for (const WeightSlice& s : w)
    for (int64_t j = 0; j < s.n; j += panel) tasks.push_back({&s, j});
  pool.parallel_for(static_cast<int64_t>(tasks.size()), [&](int64_t i) {
    const Task& t = tasks[static_cast<size_t>(i)];
    fn(*t.s, t.j0, std::min(panel, t.s->n - t.j0));
  });
}

void store_tiles(const float (*c)[kAmxTile * kAmxTile], int64_t r0, int64_t m, int64_t cols, float* y, int64_t ldy) {
  for (int t = 0; t < 4; ++t) {
    const int64_t row0 = r0 + (t / 2) * kAmxTile, col0 = (t % 2) * kAmxTile;
    for (int64_t r = 0; r < kAmxTile && row0 + r < m; ++r)
      for (int64_t j = 0; j < kAmxTile && col0 + j < cols; ++j) y[(row0 + r) * ldy + col0 + j] = c[t][r * kAmxTile + j];
  }
}

void quantize_x_q8(const float* x, XBlockQ8* out, int64_t k) {
  for (int64_t b = 0; b < k / kQ8_0BlockSize; ++b) {
    const float* v = x + b * kQ8_0BlockSize;
    float amax = 0;
    for (int i = 0; i < kQ8_0BlockSize; ++i) {
      const float a = std::fabs(v[i]);
      if (!(a <= amax)) amax = a;  // a NaN sticks, so it reaches y
    }
    const float d = amax / 127.0f;
    out[b].d = d;
    if (!std::isfinite(d) || d == 0.0f) {  // all zero, or NaN/inf: y gets 0 or NaN
      std::memset(out[b].qs, 0, sizeof(out[b].qs));
      out[b].dsum = out[b].d * 0.0f;
      if (d != 0.0f) out[b].d = NAN;
      continue;
    }
    const float id = 1.0f / d;
    int32_t sum = 0;
    for (int i = 0; i < kQ8_0BlockSize; ++i) {
      out[b].qs[i] = static_cast<int8_t>(std::nearbyint(v[i] * id));
      sum += out[b].qs[i];
    }
    out[b].dsum = d * static_cast<float>(sum);
  }
}

}  // namespace detail

namespace {

using detail::LinearKernels;
using detail::XBlockQ8;

SimdLevel detect() {
#if defined(SY_LINEAR_X86)
  __builtin_cpu_init();
  // F16C through CPUID (leaf 1, ECX bit 29): clang 14's __builtin_cpu_supports does not
  // know the "f16c" name (Debian 12's clang, which the sanitizer build uses).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c)) return SimdLevel::kScalar;
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq")))
    return SimdLevel::kAvx2;
  return __builtin_cpu_supports("avx512vnni") ? SimdLevel::kAvx512Vnni : SimdLevel::kAvx512;
#else
  return SimdLevel::kScalar;
#endif
}

SimdLevel from_env(SimdLevel detected) {
  const char* e = std::getenv("SWITCHYARD_CPU_SIMD");
  if (!e || !*e) return detected;
  for (int l = 0; l <= static_cast<int>(SimdLevel::kAvx512Vnni); ++l)
    if (std::string_view(e) == simd_level_name(static_cast<SimdLevel>(l)))
      return std::min(detected, static_cast<SimdLevel>(l));
  // Read on the first product, on the engine thread: a typo must not fail every step.
  std::fprintf(stderr, "SWITCHYARD_CPU_SIMD=%s: expected scalar, avx2, avx512 or avx512vnni; using %s\n", e,
               simd_level_name(detected));
  return detected;
}

std::atomic<int>& level_slot() {
  static std::atomic<int> level{static_cast<int>(from_env(detected_simd_level()))};
  return level;
}

const LinearKernels& kernels_for(SimdLevel l, bool prefetch) {
  const LinearKernels* k = nullptr;
  switch (l) {
    case SimdLevel::kAvx512Vnni: k = detail::linear_kernels_avx512_vnni(prefetch); break;
    case SimdLevel::kAvx512: k = detail::linear_kernels_avx512(prefetch); break;
    case SimdLevel::kAvx2: k = detail::linear_kernels_avx2(prefetch); break;
    case SimdLevel::kScalar: break;
  }
  return k ? *k : *detail::linear_kernels_scalar();
}

// The types multiplied against x quantized to int8 per block of 32.
bool int8_x(DType t) { return t != DType::kF32 && t != DType::kF16 && t != DType::kBF16; }

// dtype_name lives in common's library, which kernels/ does not link.
std::string type_name(DType t) { return "#" + std::to_string(static_cast<int>(t)); }

size_t row_bytes(DType t, int64_t k) {
  switch (t) {
    case DType::kF32: return static_cast<size_t>(k) * 4;
    case DType::kF16:
    case DType::kBF16: return static_cast<size_t>(k) * 2;
    case DType::kQ8_0: return static_cast<size_t>(k / kQ8_0BlockSize) * sizeof(BlockQ8_0);
    case DType::kQ4_0: return static_cast<size_t>(k / kQ4_0BlockSize) * sizeof(BlockQ4_0);
    case DType::kQ4_K: return static_cast<size_t>(k / kQKBlockSize) * sizeof(BlockQ4_K);
    case DType::kQ5_K: return static_cast<size_t>(k / kQKBlockSize) * sizeof(BlockQ5_K);
    case DType::kQ6_K: return static_cast<size_t>(k / kQKBlockSize) * sizeof(BlockQ6_K);
    default: return 0;
  }
}

void check_slices(std::span<const WeightSlice> w, int64_t k) {
  for (const WeightSlice& s : w) {
    if (!linear_supports(s.type)) throw std::invalid_argument("linear: weights of DType " + type_name(s.type));
    if (int8_x(s.type) && k % kQ8_0BlockSize != 0) throw std::invalid_argument("linear: block rows of k % 32 != 0");
    if ((s.type == DType::kQ4_K || s.type == DType::kQ5_K || s.type == DType::kQ6_K) && k % kQKBlockSize != 0)
      throw std::invalid_argument("linear: K-quant rows of k % 256 != 0");
  }
}

// Steps of many rows (prompts) when batch invariance is not asked for: tiles of weight
// rows dequantized to float32 on the pool, multiplied by OpenBLAS sgemm (its own
// threads; the two never run at once).
//
// Block-type slices multiply x as the int8 kernels see it (quantized per block, then widened
// back): a prompt's logits then differ from the decode kernels' by float32 rounding only,
// not by the activations' quantization error.
void linear_sgemm(const float* x, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                  ThreadPool& pool) {
  const int64_t tile_rows = std::max<int64_t>(16, (int64_t{1} << 20) / k);
  thread_local std::vector<float> tile, x_q8;
  const float* xq = nullptr;
  if (std::any_of(w.begin(), w.end(), [](const WeightSlice& s) { return int8_x(s.type); })) {
    x_q8.resize(static_cast<size_t>(m * k));
    float* out = x_q8.data();
    pool.parallel_for(m, [&](int64_t r) {
      XBlockQ8 blocks[16];
      for (int64_t c0 = 0; c0 < k; c0 += 16 * kQ8_0BlockSize) {
        const int64_t n = std::min<int64_t>(16 * kQ8_0BlockSize, k - c0);
        detail::quantize_x_q8(x + r * k + c0, blocks, n);
        for (int64_t i = 0; i < n; ++i)
          out[r * k + c0 + i] = blocks[i / kQ8_0BlockSize].d * blocks[i / kQ8_0BlockSize].qs[i % kQ8_0BlockSize];
      }
    });
    xq = out;
  }
  for (const WeightSlice& s : w) {
    for (int64_t j0 = 0; j0 < s.n; j0 += tile_rows) {
      const int64_t jn = std::min(tile_rows, s.n - j0);
      const float* wt = nullptr;
      int64_t ldw = k;
      if (s.type == DType::kF32 && s.row_stride % 4 == 0) {
        wt = reinterpret_cast<const float*>(s.data + static_cast<size_t>(j0) * s.row_stride);
        ldw = static_cast<int64_t>(s.row_stride / 4);
      } else {
        tile.resize(static_cast<size_t>(jn * k));
        float* dst = tile.data();  // a thread_local named in the lambda would be each worker's own
        const int64_t parts = std::min<int64_t>(jn, pool.size() * 2);
        pool.parallel_for(parts, [&](int64_t p) {
          for (int64_t j = jn * p / parts; j < jn * (p + 1) / parts; ++j)
            weight_row_to_f32(s.type, s.data + static_cast<size_t>(j0 + j) * s.row_stride, dst + j * k, k);
        });
        wt = tile.data();
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(jn),
                  static_cast<blasint>(k), 1.0f, int8_x(s.type) ? xq : x, static_cast<blasint>(k), wt,
                  static_cast<blasint>(ldw), 0.0f,
                  y + s.y_col0 + j0, static_cast<blasint>(ldy));
    }
  }
}

// x's rows quantized for the block types (quantize_x_q8), in a buffer of this thread's
// holding `rows` >= m rows, those past m zero; on the pool when there are enough rows.
const XBlockQ8* quantized_x(const float* x, int64_t m, int64_t rows, int64_t k, ThreadPool& pool) {
  const int64_t nb = k / kQ8_0BlockSize;
  thread_local std::vector<XBlockQ8> buffer;
  buffer.resize(static_cast<size_t>(rows * nb));
  XBlockQ8* xq = buffer.data();  // the caller's buffer: a thread_local named in a lambda would be each worker's own
  auto quantize = [&](int64_t r) {
    if (r < m) return detail::quantize_x_q8(x + r * k, xq + r * nb, k);
    std::memset(static_cast<void*>(xq + r * nb), 0, static_cast<size_t>(nb) * sizeof(XBlockQ8));
  };
  if (rows >= 8)
    pool.parallel_for(rows, quantize);
  else
    for (int64_t r = 0; r < rows; ++r) quantize(r);
  return xq;
}

// Slices the AMX tiles take: block types (int8 tiles) and bf16 rows of whole 32-value
// chunks (bf16 tiles).
bool amx_bf16(const WeightSlice& s, int64_t k) { return s.type == DType::kBF16 && k % 32 == 0; }
bool amx_takes(const WeightSlice& s, int64_t k) { return int8_x(s.type) || amx_bf16(s, k); }

// x's rows rounded to bf16 in a buffer of this thread's holding `rows` >= m rows, those
// past m zero.
const uint16_t* bf16_x(const float* x, int64_t m, int64_t rows, int64_t k, ThreadPool& pool) {
  thread_local std::vector<uint16_t> buffer;
  buffer.resize(static_cast<size_t>(rows * k));
  uint16_t* xb = buffer.data();  // the caller's buffer (see quantized_x)
  pool.parallel_for(rows, [&](int64_t r) {
    for (int64_t c = 0; c < k; ++c) xb[r * k + c] = r < m ? f32_to_bf16(x[r * k + c]) : 0;
  });
  return xb;
}

// fast_prefill on a processor with AMX: block-type slices on int8 tiles (x quantized once),
// bf16 slices on bf16 tiles (x rounded once), both padded with zero rows to the tiles' 32;
// the others through sgemm.
void linear_fast_amx(const float* x, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
                     ThreadPool& pool) {
  const int64_t rows = (m + 31) / 32 * 32;
  std::vector<WeightSlice> blocks, halves, floats;
  for (const WeightSlice& s : w) (int8_x(s.type) ? blocks : amx_bf16(s, k) ? halves : floats).push_back(s);
  if (!blocks.empty()) detail::linear_amx(quantized_x(x, m, rows, k, pool), m, k, blocks, y, ldy, pool);
  if (!halves.empty()) detail::linear_amx_bf16(bf16_x(x, m, rows, k, pool), m, k, halves, y, ldy, pool);
  if (!floats.empty()) linear_sgemm(x, m, k, floats, y, ldy, pool);
}

// Q4_K / Q5_K rows to float32 (the sgemm path's tiles).
template <class Blk>
void k4_row_to_f32(const Blk* b, float* dst, int64_t n) {
  for (int64_t s = 0; s < n / kQKBlockSize; ++s) {
    uint8_t sc[8], mn[8];
    detail::unpack_q4_k_scales(b[s].scales, sc, mn);
    const float d = f16_to_f32(b[s].d), dmin = f16_to_f32(b[s].dmin);
    for (int i = 0; i < kQKBlockSize; ++i) {
      const int sub = i / 32, l = i % 32;
      const uint8_t q = b[s].qs[32 * (sub / 2) + l];
      int qi = sub % 2 ? q >> 4 : q & 0x0f;
      if constexpr (std::is_same_v<Blk, BlockQ5_K>) qi |= ((b[s].qh[l] >> sub) & 1) << 4;
      dst[s * kQKBlockSize + i] = d * sc[sub] * static_cast<float>(qi) - dmin * mn[sub];
    }
  }
}

struct Chunk {
  const WeightSlice* s;
  int64_t j0, j1;
};

}  // namespace

#if !defined(SY_LINEAR_X86)
bool amx_usable() { return false; }
#endif

const char* simd_level_name(SimdLevel l) {
  switch (l) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx512Vnni: return "avx512vnni";
  }
  return "?";
}

SimdLevel detected_simd_level() {
  static const SimdLevel l = detect();
  return l;
}

SimdLevel simd_level() { return static_cast<SimdLevel>(level_slot().load(std::memory_order_relaxed)); }

SimdLevel set_simd_level(SimdLevel l) {
  const SimdLevel set = std::min(l, detected_simd_level());
  level_slot().store(static_cast<int>(set), std::memory_order_relaxed);
  return set;
}

bool linear_supports(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8_0 || t == DType::kQ4_0 ||
         t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K;
}

void weight_row_to_f32(DType t, const uint8_t* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + i * 2, 2);
        dst[i] = t == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(b[i / kQ8_0BlockSize].d) * b[i / kQ8_0BlockSize].qs[i % kQ8_0BlockSize];
      return;
    }
    case DType::kQ4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(src);
      for (int64_t i = 0; i < n; ++i) {
        const BlockQ4_0& blk = b[i / kQ4_0BlockSize];
        const int j = static_cast<int>(i % kQ4_0BlockSize);
        dst[i] = f16_to_f32(blk.d) * static_cast<float>((j < 16 ? blk.qs[j] & 0x0f : blk.qs[j - 16] >> 4) - 8);
      }
      return;
    }
    case DType::kQ4_K: return k4_row_to_f32(reinterpret_cast<const BlockQ4_K*>(src), dst, n);
    case DType::kQ5_K: return k4_row_to_f32(reinterpret_cast<const BlockQ5_K*>(src), dst, n);
    case DType::kQ6_K: {
      const auto* b = reinterpret_cast<const BlockQ6_K*>(src);
      for (int64_t s = 0; s < n / kQKBlockSize; ++s) {
        const float d = f16_to_f32(b[s].d);
        for (int i = 0; i < kQKBlockSize; ++i)
          dst[s * kQKBlockSize + i] = d * static_cast<float>(b[s].scales[i / 16]) * static_cast<float>(detail::q6_k_q(b[s], i) - 32);
      }
      return;
    }
    default: throw std::invalid_argument("weight_row_to_f32: DType " + type_name(t));
  }
}

void linear(const float* x, int64_t m, int64_t k, std::span<const WeightSlice> w, float* y, int64_t ldy,
            ThreadPool& pool, const LinearOptions& opt) {
  if (m <= 0 || w.empty()) return;
  check_slices(w, k);
  if (opt.fast_prefill && m >= kFastPrefillRows) {
    // AMX only at the top SIMD level: a lowered level (SWITCHYARD_CPU_SIMD, tests) keeps
    // the processor's newest instructions out, these included.
    if (opt.amx && simd_level() == SimdLevel::kAvx512Vnni && amx_usable() &&
        std::any_of(w.begin(), w.end(), [k](const WeightSlice& s) { return amx_takes(s, k); }))
      return linear_fast_amx(x, m, k, w, y, ldy, pool);
    return linear_sgemm(x, m, k, w, y, ldy, pool);
  }
  // Prefetching tiles only where x's rows fit one kernel call: with more, a chunk's
  // weights are read from memory once and then from cache by the next groups of rows, and
  // the prefetches only cost (measured: bf16 deterministic prefill 469 against 612 tok/s).
  const LinearKernels& kern = kernels_for(simd_level(), false);
  const LinearKernels& kern_pf = kernels_for(simd_level(), opt.prefetch);

  // x quantized once for every block-type slice.
  const int64_t nb = k / kQ8_0BlockSize;
  const XBlockQ8* xq = std::any_of(w.begin(), w.end(), [](const WeightSlice& s) { return int8_x(s.type); })
                           ? quantized_x(x, m, m, k, pool)
                           : nullptr;

  auto rows_per_call = [&](DType t) -> int64_t { return int8_x(t) ? kern.int8_rows : detail::kLinearRows; };

  // Chunks of weight rows: four or more per thread so that uneven cores even out, and
  // where x has more rows than one kernel call takes, small enough (64 KiB) to stay in
  // the core's cache while every group of rows passes over them.
  int64_t total = 0;
  for (const WeightSlice& s : w) total += s.n;
  const int64_t balanced = std::max<int64_t>(1, (total + pool.size() * 4 - 1) / (pool.size() * 4));
  std::vector<Chunk> chunks;
  for (const WeightSlice& s : w) {
    int64_t per = balanced;
    if (m > rows_per_call(s.type)) per = std::min(per, std::max<int64_t>(4, (64 << 10) / static_cast<int64_t>(row_bytes(s.type, k))));
    for (int64_t j = 0; j < s.n; j += per) chunks.push_back({&s, j, std::min(s.n, j + per)});
  }
  pool.parallel_for(static_cast<int64_t>(chunks.size()), [&](int64_t c) {
    const Chunk& ch = chunks[static_cast<size_t>(c)];
    const WeightSlice& s = *ch.s;
    const uint8_t* wp = s.data + static_cast<size_t>(ch.j0) * s.row_stride;
    const int64_t cols = ch.j1 - ch.j0;
    const int64_t step = rows_per_call(s.type);
    const LinearKernels& kk = m <= step ? kern_pf : kern;
    for (int64_t r = 0; r < m; r += step) {
      const int rows = static_cast<int>(std::min<int64_t>(step, m - r));
      float* yp = y + r * ldy + s.y_col0 + ch.j0;
      switch (s.type) {
        case DType::kQ8_0: kk.q8_0(xq + r * nb, nb, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kQ4_0: kk.q4_0(xq + r * nb, nb, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kQ4_K: kk.q4_k(xq + r * nb, nb, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kQ5_K: kk.q5_k(xq + r * nb, nb, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kQ6_K: kk.q6_k(xq + r * nb, nb, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kBF16: kk.bf16(x + r * k, k, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        case DType::kF16: kk.f16(x + r * k, k, rows, wp, s.row_stride, cols, k, yp, ldy); break;
        default: kk.f32(x + r * k, k, rows, wp, s.row_stride, cols, k, yp, ldy); break;
      }
    }
  });
}

}  // namespace sy::cpu
