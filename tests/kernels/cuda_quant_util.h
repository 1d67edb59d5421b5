// What the quantized-kernel tests share (cuda_quant_test.cpp, cuda_quant_gemm_test.cpp):
// random matrices in each GGUF block format with their CPU dequantization and device
// layout, and a double-precision reference product.
#pragma once

#include <cuda_bf16.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/quant_matrix.cuh"
#include "worker/model/convert.h"

namespace sy::quant_test {

using namespace sy::testing;
using cuda::QuantType;

inline constexpr QuantType kTypes[] = {QuantType::kQ4_0, QuantType::kQ4_K, QuantType::kQ5_K,
                                QuantType::kQ6_K};

inline DType dtype_of(QuantType t) {
  switch (t) {
    case QuantType::kQ4_0: return DType::kQ4_0;
    case QuantType::kQ4_K: return DType::kQ4_K;
    case QuantType::kQ5_K: return DType::kQ5_K;
    case QuantType::kQ6_K: return DType::kQ6_K;
  }
  return DType::kF32;
}

inline std::string name(QuantType t) {
  return dtype_name(dtype_of(t));
}

// A random [n, k] matrix in GGUF blocks, its CPU dequantization, and the device layout
// (quant_matrix.cuh) uploaded.
struct QuantProblem {
  QuantProblem(std::mt19937_64& rng, QuantType t, int64_t n, int64_t k) : type(t), n(n), k(k) {
    const cuda::QuantLayout l = cuda::quant_layout(t);
    const int64_t blocks = n * (k / l.block_values);
    std::vector<uint8_t> file(static_cast<size_t>(blocks * l.file_bytes));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : file) b = static_cast<uint8_t>(byte(rng));
    // Sane fp16 scales: the super-block scales of real files are small; random bytes
    // would give infinities and NaNs. Signs vary (ggml's d may be negative).
    std::uniform_real_distribution<float> mag(1e-4f, 2e-2f);
    std::bernoulli_distribution neg(0.3);
    auto scale = [&] { return f32_to_f16(neg(rng) ? -mag(rng) : mag(rng)); };
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* p = file.data() + b * l.file_bytes;
      auto put = [&](int offset) {
        const uint16_t h = scale();
        std::memcpy(p + offset, &h, 2);
      };
      if (t == QuantType::kQ4_0) put(0);
      if (t == QuantType::kQ4_K || t == QuantType::kQ5_K) put(0), put(2);  // d, dmin
      if (t == QuantType::kQ6_K) put(208);
    }
    dequantized.resize(static_cast<size_t>(n * k));
    to_f32(dtype_of(t), file.data(), dequantized.data(), n * k);
    // The device layout: block bodies in one plane, the lone scale (if any) in another.
    std::vector<uint8_t> body(static_cast<size_t>(blocks * l.body_bytes));
    std::vector<uint16_t> d(l.d_offset >= 0 ? static_cast<size_t>(blocks) : 1);
    for (int64_t b = 0; b < blocks; ++b) {
      std::memcpy(&body[b * l.body_bytes], &file[b * l.file_bytes + l.body_offset], l.body_bytes);
      if (l.d_offset >= 0) std::memcpy(&d[b], &file[b * l.file_bytes + l.d_offset], 2);
    }
    d_body = std::make_unique<DeviceArray<uint8_t>>(body);
    d_d = std::make_unique<DeviceArray<uint16_t>>(d);
  }

  cuda::QuantMatrix matrix() const {
    const bool has_d = cuda::quant_layout(type).d_offset >= 0;
    return {type, d_body->get(), has_d ? d_d->as<__half>() : nullptr, n, k};
  }

  QuantType type;
  int64_t n, k;
  std::vector<float> dequantized;  // [n, k], the CPU dequantizer's values
  std::unique_ptr<DeviceArray<uint8_t>> d_body;
  std::unique_ptr<DeviceArray<uint16_t>> d_d;
};

// y[m, n] = x[m, k] · wᵀ in double over the given weights, and Σ |x| · |w| per output
// (the scale of what rounding the weights can move).
struct Product {
  std::vector<float> y, abs;
};
inline Product reference_product(const std::vector<float>& x, const std::vector<float>& w, int64_t m,
                          int64_t n, int64_t k) {
  Product p{std::vector<float>(static_cast<size_t>(m * n)), std::vector<float>(static_cast<size_t>(m * n))};
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, a = 0;
      for (int64_t c = 0; c < k; ++c) {
        s += static_cast<double>(x[r * k + c]) * w[j * k + c];
        a += std::fabs(static_cast<double>(x[r * k + c]) * w[j * k + c]);
      }
      p.y[r * n + j] = static_cast<float>(s);
      p.abs[r * n + j] = static_cast<float>(a);
    }
  return p;
}

inline std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, int64_t m,
                             int64_t n, int64_t k) {
  return reference_product(x, w, m, n, k).y;
}

// The largest |got − want| / Σ |x| · |w| over the outputs; infinite for a non-finite one.
inline double worst_element(const std::vector<float>& got, const Product& want) {
  if (got.size() != want.y.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want.y[i]) / std::max(1e-30, static_cast<double>(want.abs[i])));
  }
  return worst;
}

inline std::vector<float> random_x(std::mt19937_64& rng, int64_t m, int64_t k) {
  std::vector<float> x = normal_floats(rng, static_cast<size_t>(m * k));
  for (auto& v : x) v = round_bf16(v);
  return x;
}

// A random Q8_0 matrix in GGUF blocks, split into the device layout.
struct Q8Host {
  std::vector<float> dequantized;  // [n, k] fp32, exactly scale · quant
  std::vector<int8_t> quants;
  std::vector<uint16_t> scales;
};

inline Q8Host random_q8_0(std::mt19937_64& rng, int64_t n, int64_t k) {
  const std::vector<float> w = normal_floats(rng, n * k, 0.05f);
  std::vector<BlockQ8_0> blocks(static_cast<size_t>(n * k / kQ8_0BlockSize));
  quantize_q8_0(w.data(), blocks.data(), n * k);
  Q8Host h;
  h.dequantized.resize(w.size());
  to_f32(DType::kQ8_0, blocks.data(), h.dequantized.data(), n * k);
  for (const BlockQ8_0& b : blocks) {
    h.scales.push_back(b.d);
    h.quants.insert(h.quants.end(), b.qs, b.qs + kQ8_0BlockSize);
  }
  return h;
}

}  // namespace sy::quant_test
