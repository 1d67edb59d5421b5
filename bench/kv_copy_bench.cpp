// switchyard-kv-copy-bench: the KV host tier's copies on the current GPU at the
// Llama-3-8B cache shape (32 layers, 8 KV heads × 128, 16-token blocks: 2 MiB a block,
// 128 KiB a token): kernels/cuda/kv_copy (the SMs read and write mapped pinned memory)
// against one cudaMemcpyAsync per chunk (the copy engines), saves and loads of 64 to
// 1,024 random blocks (1K to 16K tokens). Each arm's copies are checked byte for byte
// before its time is printed.
//
//   switchyard-kv-copy-bench [trials, 5]
//
// Prints per arm, direction and block count the median of `trials` runs: ms, GB/s and
// ms per 1K tokens (what a prefix hit of that many tokens waits for).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/kv_copy.cuh"

namespace {

constexpr int kLayers = 32, kBlockSize = 16, kKvDim = 8 * 128;
constexpr size_t kChunk = size_t{kBlockSize} * kKvDim * 2;  // bf16
constexpr size_t kParts = 2 * kLayers;
constexpr int kBlocks = 2048, kSlots = 2048;  // 4 GiB of cache, 4 GiB of host tier

void ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "kv-copy-bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

struct Bufs {
  char* cache = nullptr;  // device
  char* host = nullptr;   // mapped pinned
  int2* pairs = nullptr;  // mapped pinned
  cudaStream_t stream = nullptr;
};

void run(const Bufs& b, int n, bool to_host, bool kernel) {
  if (kernel) {
    const sy::cuda::KvCopyArgs a{b.cache, b.host, b.pairs, n, to_host, {kChunk, size_t{kBlocks} * kChunk, kLayers}};
    ok(sy::cuda::copy_kv_blocks(a, b.stream), "kernel");
    return;
  }
  for (int i = 0; i < n; ++i)
    for (size_t p = 0; p < kParts; ++p) {
      char* dev = b.cache + p * kBlocks * kChunk + static_cast<size_t>(b.pairs[i].x) * kChunk;
      char* host = b.host + static_cast<size_t>(b.pairs[i].y) * kParts * kChunk + p * kChunk;
      ok(cudaMemcpyAsync(to_host ? host : dev, to_host ? dev : host, kChunk, cudaMemcpyDefault, b.stream), "memcpy");
    }
}

// Saves the pairs' blocks, compares the slots with the cache, loads them into other
// blocks and compares those.
bool check(const Bufs& b, int n, bool kernel) {
  std::vector<char> cache(size_t{kBlocks} * kParts * kChunk);
  ok(cudaMemcpy(cache.data(), b.cache, cache.size(), cudaMemcpyDeviceToHost), "download");
  for (int i = 0; i < n; ++i) std::memset(b.host + static_cast<size_t>(b.pairs[i].y) * kParts * kChunk, 0x5a, kParts * kChunk);
  run(b, n, true, kernel);
  ok(cudaStreamSynchronize(b.stream), "save");
  for (int i = 0; i < n; ++i)
    for (size_t p = 0; p < kParts; ++p)
      if (std::memcmp(b.host + static_cast<size_t>(b.pairs[i].y) * kParts * kChunk + p * kChunk,
                      cache.data() + p * kBlocks * kChunk + static_cast<size_t>(b.pairs[i].x) * kChunk, kChunk) != 0)
        return false;
  std::vector<int2> saved(b.pairs, b.pairs + n);
  for (int i = 0; i < n; ++i) b.pairs[i].x = (b.pairs[i].x + kBlocks / 2) % kBlocks;
  run(b, n, false, kernel);
  ok(cudaStreamSynchronize(b.stream), "load");
  ok(cudaMemcpy(cache.data(), b.cache, cache.size(), cudaMemcpyDeviceToHost), "download");
  bool same = true;
  for (int i = 0; i < n && same; ++i)
    for (size_t p = 0; p < kParts && same; ++p)
      same = std::memcmp(cache.data() + p * kBlocks * kChunk + static_cast<size_t>(b.pairs[i].x) * kChunk,
                         b.host + static_cast<size_t>(b.pairs[i].y) * kParts * kChunk + p * kChunk, kChunk) == 0;
  std::copy(saved.begin(), saved.end(), b.pairs);
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  Bufs b;
  ok(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "stream");
  ok(cudaMalloc(&b.cache, size_t{kBlocks} * kParts * kChunk), "cache");
  ok(cudaHostAlloc(reinterpret_cast<void**>(&b.host), size_t{kSlots} * kParts * kChunk, cudaHostAllocMapped), "host tier");
  ok(cudaHostAlloc(reinterpret_cast<void**>(&b.pairs), kSlots * sizeof(int2), cudaHostAllocMapped), "pairs");
  std::mt19937 rng(7);
  {
    std::vector<uint32_t> fill(size_t{kBlocks} * kParts * kChunk / 4);
    uint32_t x = 2463534242u;  // xorshift: distinct bytes everywhere, quickly
    for (auto& v : fill) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      v = x;
    }
    ok(cudaMemcpy(b.cache, fill.data(), fill.size() * 4, cudaMemcpyHostToDevice), "fill");
  }
  cudaDeviceProp prop{};
  ok(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("kv-copy-bench on %s: %zu KiB a block (%d layers), median of %d\n", prop.name,
              kParts * kChunk >> 10, kLayers, trials);
  std::printf("%-8s %-5s %6s %10s %8s %14s\n", "arm", "dir", "blocks", "ms", "GB/s", "ms/1K tokens");
  cudaEvent_t t0, t1;
  ok(cudaEventCreate(&t0), "event");
  ok(cudaEventCreate(&t1), "event");
  for (int n : {64, 256, 1024}) {
    std::vector<int> blocks(kBlocks), slots(kSlots);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    std::shuffle(slots.begin(), slots.end(), rng);
    for (int i = 0; i < n; ++i) b.pairs[i] = {blocks[static_cast<size_t>(i)], slots[static_cast<size_t>(i)]};
    for (bool kernel : {true, false}) {
      const char* arm = kernel ? "kernel" : "memcpy";
      if (!check(b, n, kernel)) {
        std::printf("%-8s %6d blocks: copies differ from the source, no time printed\n", arm, n);
        continue;
      }
      for (bool to_host : {true, false}) {
        std::vector<float> ms;
        for (int t = 0; t < trials; ++t) {
          ok(cudaEventRecord(t0, b.stream), "record");
          run(b, n, to_host, kernel);
          ok(cudaEventRecord(t1, b.stream), "record");
          ok(cudaEventSynchronize(t1), "sync");
          float m = 0;
          ok(cudaEventElapsedTime(&m, t0, t1), "elapsed");
          ms.push_back(m);
        }
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2], bytes = static_cast<double>(n) * kParts * kChunk;
        std::printf("%-8s %-5s %6d %10.3f %8.1f %14.3f\n", arm, to_host ? "save" : "load", n, med, bytes / med / 1e6,
                    med / (n * kBlockSize / 1000.0));
      }
    }
  }
  return 0;
}
