// kernels/cuda/kv_copy.cuh against the layout written out here: random cache bytes saved
// to poisoned host slots and loaded back into a poisoned cache, for chunk sizes that take
// the 16-, 4- and 1-byte paths; bytes no copy names stay poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "cuda_test_util.h"
#include "kernels/cuda/kv_copy.cuh"

namespace sy {
namespace {

// Pinned host memory the device maps.
struct Mapped {
  explicit Mapped(size_t bytes) : bytes(bytes) { EXPECT_EQ(cudaHostAlloc(&p, bytes, cudaHostAllocMapped), cudaSuccess); }
  ~Mapped() { cudaFreeHost(p); }
  char* get() const { return static_cast<char*>(p); }
  void* p = nullptr;
  size_t bytes;
};

// Offsets of block b's chunk `part` (2·layer + keys 0 | values 1) in the cache, and of
// slot s's in the host tier.
size_t cache_at(size_t b, size_t part, size_t chunk, size_t blocks) { return part * blocks * chunk + b * chunk; }
size_t host_at(size_t s, size_t part, size_t chunk, size_t parts) { return s * parts * chunk + part * chunk; }

TEST(CudaKvCopy, SavesAndLoadsWholeBlocksInTheHostLayout) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = testing::fresh_rng();
  const size_t blocks = 12, slots = 9, layers = 3, parts = 2 * layers, picks = 5;
  for (size_t chunk : {size_t{4096}, size_t{36}, size_t{7}}) {
    SCOPED_TRACE("chunk bytes " + std::to_string(chunk));
    std::vector<uint8_t> cache(blocks * chunk * parts);
    for (auto& x : cache) x = static_cast<uint8_t>(rng());
    testing::DeviceArray<uint8_t> dev(cache);
    Mapped host(slots * parts * chunk), pairs(picks * sizeof(int2));
    std::memset(host.get(), 0xff, host.bytes);

    std::vector<int32_t> b(blocks), s(slots);
    std::iota(b.begin(), b.end(), 0);
    std::iota(s.begin(), s.end(), 0);
    std::shuffle(b.begin(), b.end(), rng);
    std::shuffle(s.begin(), s.end(), rng);
    auto* pr = reinterpret_cast<int2*>(pairs.get());
    for (size_t i = 0; i < picks; ++i) pr[i] = {b[i], s[i]};
    cuda::KvCopyArgs a{dev.as<char>(), host.get(), pr, static_cast<int32_t>(picks), true,
                       {chunk, blocks * chunk, static_cast<int32_t>(layers)}};
    SY_CUDA_OK(cuda::copy_kv_blocks(a, nullptr));
    SY_CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint8_t> want(host.bytes, 0xff);
    for (size_t i = 0; i < picks; ++i)
      for (size_t p = 0; p < parts; ++p)
        std::memcpy(&want[host_at(s[i], p, chunk, parts)], &cache[cache_at(b[i], p, chunk, blocks)], chunk);
    EXPECT_EQ(std::memcmp(want.data(), host.get(), host.bytes), 0) << "saved slots";

    // Back into other blocks of a poisoned cache.
    dev.poison();
    std::shuffle(b.begin(), b.end(), rng);
    for (size_t i = 0; i < picks; ++i) pr[i].x = b[i];
    a.to_host = false;
    SY_CUDA_OK(cuda::copy_kv_blocks(a, nullptr));
    const std::vector<uint8_t> got = dev.download();
    std::vector<uint8_t> want_cache(cache.size(), 0xff);
    for (size_t i = 0; i < picks; ++i)
      for (size_t p = 0; p < parts; ++p)
        std::memcpy(&want_cache[cache_at(b[i], p, chunk, blocks)], &want[host_at(s[i], p, chunk, parts)], chunk);
    EXPECT_EQ(got, want_cache) << "loaded blocks";
  }
}

TEST(CudaKvCopy, NothingToCopyIsNoLaunchAndMissingBuffersAreErrors) {
  SY_SKIP_WITHOUT_CUDA();
  cuda::KvCopyArgs a;
  EXPECT_EQ(cuda::copy_kv_blocks(a, nullptr), cudaSuccess);
  a.n = 1;
  EXPECT_EQ(cuda::copy_kv_blocks(a, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace sy
