// Helpers for the GPU kernel tests: a skip when no CUDA device is present, device
// buffers poisoned with NaN before each launch, fresh random inputs, bf16 rounding and
// the relative-error measure the tests compare with.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/half.h"
#include "kernels/cuda/device_buffer.cuh"

namespace sy::testing {

inline bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define SY_SKIP_WITHOUT_CUDA() \
  if (!::sy::testing::cuda_device_present()) GTEST_SKIP() << "no CUDA device"

#define SY_CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << cudaGetErrorString(expr)

// A device array of T. poison() fills it with 0xFF bytes: NaN for fp32 and bf16, -1
// for int32, so an element the kernel never wrote is visible.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EXPECT_EQ(buf_.allocate(n * sizeof(T)), cudaSuccess); }
  explicit DeviceArray(const std::vector<T>& v) : DeviceArray(v.size()) { upload(v); }

  T* get() const { return buf_.as<T>(); }
  template <typename U>
  U* as() const {
    return reinterpret_cast<U*>(buf_.get());
  }
  void upload(const std::vector<T>& v) {
    EXPECT_EQ(cudaMemcpy(get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  void poison() { EXPECT_EQ(cudaMemset(get(), 0xff, n_ * sizeof(T)), cudaSuccess); }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  cuda::DeviceBuffer buf_;
  size_t n_;
};

// A fresh seed per test, printed on failure.
inline std::mt19937_64 fresh_rng() {
  const uint64_t seed = std::random_device{}();
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return std::mt19937_64(seed);
}

inline std::vector<float> normal_floats(std::mt19937_64& rng, size_t n, float stddev = 1.0f,
                                        float mean = 0.0f) {
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline float round_bf16(float f) {
  return bf16_to_f32(f32_to_bf16(f));
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

inline std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}

// ‖got − want‖ / ‖want‖ in double; infinite when any value of got is not finite or
// the sizes differ.
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// bf16 keeps 8 significant bits: one rounding moves a value by at most 2^-8 of itself,
// so outputs rounded once to bf16 are within 2^-8 of the reference in the norm too.
inline constexpr double kBf16Rounding = 1.0 / 256;

}  // namespace sy::testing
