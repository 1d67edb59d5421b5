// switchyard-gemv-bench: the decode-step linear layers of Llama-3-8B (QKV, O, gate+up,
// down, LM head) through cuda::Linear on the current GPU, one row per weight format
// (bf16, q8_0, q4_0, q4_k, q5_k, q6_k) and row count (1, 8): microseconds and the
// weight bytes read per second (weight bytes / time; the activations are a few KB); for
// the 4- to 6-bit formats also the GEMV with 16 warps a CTA (".w16", a tuning arm).
// Then the expansion to bf16 that prefill runs before the GEMM, per format: GB/s of
// bytes read plus written. Each timing rotates over copies of the weight adding up to
// more than L2 and reports the median of 5 trials. Weights are random bytes: the
// kernels' speed does not depend on the values.
//
//   switchyard-gemv-bench [rows...]     (default 1 8)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/linear.cuh"
#include "kernels/cuda/q8_0_dequant.cuh"
#include "kernels/cuda/quant_dequant.cuh"
#include "kernels/cuda/quant_gemv.cuh"

namespace {

#define CHECK(expr)                                                                            \
  do {                                                                                         \
    const cudaError_t e_ = (expr);                                                             \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

using sy::cuda::QuantType;

constexpr int kTrials = 5;
constexpr double kRotateBytes = 512e6;  // > 10 × the H200's 50 MB L2

struct Shape {
  const char* name;
  int64_t n, k;
};
// Llama-3-8B: hidden 4096, 32 query and 8 KV heads of 128, FFN 14336, vocabulary 128256.
constexpr Shape kShapes[] = {{"qkv", 6144, 4096},
                             {"o", 4096, 4096},
                             {"gate_up", 28672, 4096},
                             {"down", 4096, 14336},
                             {"lm_head", 128256, 4096}};

enum class Format { kBf16, kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };
constexpr Format kFormats[] = {Format::kBf16, Format::kQ8_0, Format::kQ4_0,
                               Format::kQ4_K, Format::kQ5_K, Format::kQ6_K};

const char* format_name(Format f) {
  constexpr const char* names[] = {"bf16", "q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};
  return names[static_cast<int>(f)];
}

QuantType quant_type(Format f) {
  return static_cast<QuantType>(static_cast<int>(f) - static_cast<int>(Format::kQ4_0));
}

uint8_t* random_device_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> h(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    std::copy_n(reinterpret_cast<const uint8_t*>(&r), std::min<size_t>(8, n - i), h.data() + i);
  }
  void* p = nullptr;
  CHECK(cudaMalloc(&p, std::max<size_t>(n, 16)));
  CHECK(cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice));
  return static_cast<uint8_t*>(p);
}

// One weight of `shape` in format f; its device bytes in `bytes`.
sy::cuda::LinearWeight make_weight(Format f, const Shape& s, std::mt19937_64& rng, double& bytes) {
  sy::cuda::LinearWeight w;
  w.n = s.n;
  w.k = s.k;
  const size_t elements = static_cast<size_t>(s.n * s.k);
  if (f == Format::kBf16) {
    // Small random bf16 (exponent bits kept sane so that no value is inf or NaN).
    std::vector<uint16_t> h(elements);
    for (auto& v : h) v = static_cast<uint16_t>(0x3C00 | (rng() & 0x80FF));
    void* p = nullptr;
    CHECK(cudaMalloc(&p, elements * 2));
    CHECK(cudaMemcpy(p, h.data(), elements * 2, cudaMemcpyHostToDevice));
    w.bf16 = static_cast<const __nv_bfloat16*>(p);
    bytes = elements * 2.0;
  } else if (f == Format::kQ8_0) {
    const size_t blocks = elements / 32;
    w.q8_0 = {reinterpret_cast<const int8_t*>(random_device_bytes(elements, rng)),
              reinterpret_cast<const __half*>(random_device_bytes(blocks * 2, rng)), s.n, s.k};
    bytes = elements + blocks * 2.0;
  } else {
    const QuantType t = quant_type(f);
    const sy::cuda::QuantLayout l = sy::cuda::quant_layout(t);
    const size_t blocks = elements / l.block_values;
    const auto* d = l.d_offset >= 0 ? reinterpret_cast<const __half*>(random_device_bytes(blocks * 2, rng)) : nullptr;
    w.quant[w.quant_parts++] = {t, random_device_bytes(blocks * l.body_bytes, rng), d, s.n, s.k};
    bytes = static_cast<double>(sy::cuda::quant_device_bytes(t, s.n, s.k));
  }
  return w;
}

// Median milliseconds of one call of fn(copy), over kTrials trials cycling the copies.
template <typename Fn>
double median_ms(int copies, Fn&& fn) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int c = 0; c < copies; ++c) fn(c);  // warm-up
  const int reps = std::max(1, 64 / copies);
  std::vector<double> ms;
  for (int t = 0; t < kTrials; ++t) {
    CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r)
      for (int c = 0; c < copies; ++c) fn(c);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float elapsed = 0;
    CHECK(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed / (reps * copies));
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rows;
  for (int i = 1; i < argc; ++i) rows.push_back(std::atoi(argv[i]));
  if (rows.empty()) rows = {1, 8};
  std::mt19937_64 rng(1);
  sy::cuda::Linear linear;
  size_t max_elements = 0;
  for (const Shape& s : kShapes) max_elements = std::max(max_elements, static_cast<size_t>(s.n * s.k));
  CHECK(linear.init(max_elements));
  linear.set_gemv_max_rows(sy::cuda::kGemvBf16MaxRows);  // the bf16 GEMV, as in decode
  void *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, 64 * 14336 * 2));
  CHECK(cudaMalloc(&y, 64 * 128256 * 4));
  CHECK(cudaMemset(x, 0, 64 * 14336 * 2));
  std::printf("%-8s %-7s %4s %10s %9s %12s\n", "format", "shape", "rows", "us", "GB/s", "expand GB/s");
  for (const Format f : kFormats)
    for (const Shape& s : kShapes) {
      double bytes = 0;
      std::vector<sy::cuda::LinearWeight> copies;
      do copies.push_back(make_weight(f, s, rng, bytes));
      while (copies.size() < 16 && bytes * static_cast<double>(copies.size()) < kRotateBytes);
      // The prefill expansion: weight bytes read, bf16 written.
      double expand_gbs = 0;
      if (f != Format::kBf16) {
        auto* out = static_cast<__nv_bfloat16*>(nullptr);
        CHECK(cudaMalloc(&out, static_cast<size_t>(s.n * s.k) * 2));
        const double ms = median_ms(static_cast<int>(copies.size()), [&](int c) {
          const sy::cuda::LinearWeight& w = copies[static_cast<size_t>(c)];
          CHECK(w.is_q8_0() ? sy::cuda::q8_0_dequantize({w.q8_0, out}, nullptr)
                            : sy::cuda::quant_dequantize({w.quant[0], out}, nullptr));
        });
        expand_gbs = (bytes + s.n * s.k * 2.0) / ms / 1e6;
        CHECK(cudaFree(out));
      }
      for (const int m : rows) {
        const double ms = median_ms(static_cast<int>(copies.size()), [&](int c) {
          CHECK(linear.run(copies[static_cast<size_t>(c)], static_cast<const __nv_bfloat16*>(x), m, y,
                           sy::cuda::GemmOut::kBF16, nullptr));
        });
        std::printf("%-8s %-7s %4d %10.1f %9.0f %12.0f\n", format_name(f), s.name, m, ms * 1e3,
                    bytes / ms / 1e6, expand_gbs);
        if (!copies[0].is_quant()) continue;
        // The GEMV arm with 16 warps a CTA (QuantGemvArgs::warps).
        const double ms16 = median_ms(static_cast<int>(copies.size()), [&](int c) {
          sy::cuda::QuantGemvArgs a;
          a.w = copies[static_cast<size_t>(c)].quant[0];
          a.x = static_cast<const __nv_bfloat16*>(x);
          a.m = m;
          a.y_bf16 = static_cast<__nv_bfloat16*>(y);
          a.warps = 16;
          CHECK(sy::cuda::quant_gemv(a, nullptr));
        });
        std::printf("%-8s %-7s %4d %10.1f %9.0f\n", (std::string(format_name(f)) + ".w16").c_str(), s.name, m,
                    ms16 * 1e3, bytes / ms16 / 1e6);
      }
      for (const sy::cuda::LinearWeight& w : copies) {
        CHECK(cudaFree(const_cast<__nv_bfloat16*>(w.bf16)));
        CHECK(cudaFree(const_cast<int8_t*>(w.q8_0.quants)));
        CHECK(cudaFree(const_cast<__half*>(w.q8_0.scales)));
        CHECK(cudaFree(const_cast<uint8_t*>(w.quant[0].body)));
        CHECK(cudaFree(const_cast<__half*>(w.quant[0].d)));
      }
    }
  return 0;
}
