// switchyard-attention-bench: times the CUDA paged-attention kernels on the current GPU
// and prints achieved bandwidth (decode) and tensor throughput (prefill) beside the
// device-to-device copy bandwidth measured in the same run. Llama-3-8B attention shape:
// 32 query heads, 8 kv heads, head_dim 128, block size 16. Each timing rotates over
// several layers' caches (each larger than L2) and reports the median of 5 trials.
//
//   switchyard-attention-bench [trials-per-point]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "common/half.h"
#include "kernels/cuda/attention.cuh"

namespace {

#define CHECK(expr)                                                                            \
  do {                                                                                         \
    const cudaError_t e_ = (expr);                                                             \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

constexpr int kHeads = 32, kKvHeads = 8, kDim = 128, kBlock = 16;
int g_trials = 5;

template <typename T>
T* device_alloc(size_t n) {
  void* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

// Fills n bf16 with random values in [-1, 1] (never zeros: they can time faster).
void fill_random(__nv_bfloat16* p, size_t n, std::mt19937_64& rng) {
  static std::vector<uint16_t> pattern;
  if (pattern.empty()) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    pattern.resize(size_t{1} << 24);
    for (auto& x : pattern) x = sy::f32_to_bf16(u(rng));
  }
  for (size_t off = 0; off < n; off += pattern.size()) {
    const size_t len = std::min(pattern.size(), n - off);
    CHECK(cudaMemcpy(p + off, pattern.data() + (rng() % (pattern.size() - len + 1)), len * 2, cudaMemcpyHostToDevice));
  }
}

template <typename T>
T* upload(const std::vector<T>& v) {
  T* p = device_alloc<T>(std::max<size_t>(v.size(), 1));
  CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// Median milliseconds of one call of fn(layer), over g_trials trials of reps × layers calls.
template <typename Fn>
double median_ms(int layers, int reps, Fn&& fn) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int l = 0; l < layers; ++l) fn(l);  // warm-up
  std::vector<double> ms;
  for (int t = 0; t < g_trials; ++t) {
    CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r)
      for (int l = 0; l < layers; ++l) fn(l);
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float elapsed = 0;
    CHECK(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed / (reps * layers));
  }
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One attention problem: num_seqs sequences of `context` tokens whose last q_len are
// query rows, with `layers` separate KV caches of shuffled blocks.
struct Setup {
  sy::cuda::PagedAttentionArgs a;
  std::vector<__nv_bfloat16*> k_layers, v_layers;
  int64_t kv_bytes_per_layer = 0;  // keys and values the rows read
  double flops = 0;                 // 4·d·heads·Σ keys per row (QKᵀ and PV)

  Setup(int num_seqs, int q_len, int context, int layers, std::mt19937_64& rng) {
    const int nb = (context + kBlock - 1) / kBlock;
    const int num_blocks = nb * num_seqs;
    std::vector<int32_t> indptr{0}, indices(static_cast<size_t>(num_blocks)), last, cu{0}, pos;
    std::iota(indices.begin(), indices.end(), 0);
    std::shuffle(indices.begin(), indices.end(), rng);
    for (int s = 0; s < num_seqs; ++s) {
      indptr.push_back(indptr.back() + nb);
      last.push_back(context - (nb - 1) * kBlock);
      cu.push_back(cu.back() + q_len);
      for (int i = 0; i < q_len; ++i) {
        pos.push_back(context - q_len + i);
        flops += 4.0 * kDim * kHeads * (context - q_len + i + 1);
      }
    }
    const int tokens = num_seqs * q_len;
    const size_t cache = static_cast<size_t>(num_blocks) * kKvHeads * kBlock * kDim;
    for (int l = 0; l < layers; ++l) {
      k_layers.push_back(device_alloc<__nv_bfloat16>(cache));
      v_layers.push_back(device_alloc<__nv_bfloat16>(cache));
      fill_random(k_layers.back(), cache, rng);
      fill_random(v_layers.back(), cache, rng);
    }
    kv_bytes_per_layer = int64_t{num_seqs} * context * kKvHeads * kDim * 2 * 2;
    const int64_t stride = (kHeads + 2 * kKvHeads) * kDim;
    auto* qkv = device_alloc<__nv_bfloat16>(static_cast<size_t>(tokens * stride));
    fill_random(qkv, static_cast<size_t>(tokens * stride), rng);
    a.n_heads = kHeads;
    a.n_kv_heads = kKvHeads;
    a.head_dim = kDim;
    a.scale = 0.088f;
    a.q = qkv;
    a.q_stride = stride;
    a.k_new = qkv + kHeads * kDim;
    a.v_new = a.k_new + kKvHeads * kDim;
    a.kv_stride = stride;
    a.out = device_alloc<__nv_bfloat16>(static_cast<size_t>(tokens) * kHeads * kDim);
    a.block_size = kBlock;
    a.kv_indptr = upload(indptr);
    a.kv_indices = upload(indices);
    a.kv_last_block_len = upload(last);
    a.cu_seqlens = upload(cu);
    a.positions = upload(pos);
    a.num_seqs = num_seqs;
    a.num_tokens = tokens;
    a.workspace_bytes = sy::cuda::attention_workspace_bytes(tokens, kHeads, kDim, 64);
    a.workspace = device_alloc<uint8_t>(std::max<size_t>(a.workspace_bytes, 1));
  }
  ~Setup() {
    for (auto* p : k_layers) cudaFree(p);
    for (auto* p : v_layers) cudaFree(p);
    cudaFree(const_cast<__nv_bfloat16*>(a.q));
    cudaFree(a.out);
    for (const void* p : {static_cast<const void*>(a.kv_indptr), static_cast<const void*>(a.kv_indices),
                          static_cast<const void*>(a.kv_last_block_len), static_cast<const void*>(a.cu_seqlens),
                          static_cast<const void*>(a.positions)})
      cudaFree(const_cast<void*>(p));
    cudaFree(a.workspace);
  }
  sy::cuda::PagedAttentionArgs layer(int l) const {
    sy::cuda::PagedAttentionArgs x = a;
    x.k_cache = k_layers[static_cast<size_t>(l)];
    x.v_cache = v_layers[static_cast<size_t>(l)];
    return x;
  }
};

double copy_bandwidth_gbs() {
  const size_t bytes = size_t{2} << 30;
  auto* src = device_alloc<uint8_t>(bytes);
  auto* dst = device_alloc<uint8_t>(bytes);
  CHECK(cudaMemset(src, 1, bytes));
  const double ms = median_ms(1, 5, [&](int) { CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (ms * 1e6);
}

void bench_decode(int num_seqs, int context, std::vector<int> splits, int sms, std::mt19937_64& rng,
                  int variant = 0) {
  const int layers = 4;
  Setup s(num_seqs, 1, context, layers, rng);
  for (int l = 0; l < layers; ++l) CHECK(sy::cuda::write_kv_cache(s.layer(l), nullptr));
  const int chosen = sy::cuda::decode_num_splits(num_seqs, kKvHeads, sms);
  if (splits.empty()) splits = {chosen};
  for (int ns : splits) {
    const double ms = median_ms(layers, 20, [&](int l) {
      sy::cuda::PagedAttentionArgs x = s.layer(l);
      x.decode_variant = variant;
      CHECK(sy::cuda::paged_decode_attention(x, ns, nullptr));
    });
    std::printf("decode  batch %3d ctx %6d splits %2d%s %s  %9.1f us  %7.0f GB/s\n", num_seqs, context, ns,
                ns == chosen ? "*" : " ", variant == 1 ? "cuda-core" : "tensor   ", ms * 1e3,
                s.kv_bytes_per_layer / (ms * 1e6));
  }
}

void bench_prefill(int q_len, int context, int rows_per_warp, std::mt19937_64& rng) {
  const int layers = 2;
  Setup s(1, q_len, context, layers, rng);
  for (int l = 0; l < layers; ++l) CHECK(sy::cuda::write_kv_cache(s.layer(l), nullptr));
  const double ms = median_ms(layers, 3, [&](int l) {
    sy::cuda::PagedAttentionArgs x = s.layer(l);
    x.prefill_rows_per_warp = rows_per_warp;
    CHECK(sy::cuda::paged_prefill_attention(x, q_len, context, nullptr));
  });
  std::printf("prefill rows %5d ctx %6d rows/warp %2d  %9.3f ms  %7.1f TFLOP/s\n", q_len, context, rows_per_warp, ms,
              s.flops / (ms * 1e9));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_trials = std::max(1, std::atoi(argv[1]));
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs; heads %d/%d, head_dim %d, block %d; median of %d trials\n", prop.name, sms, kHeads,
              kKvHeads, kDim, kBlock, g_trials);
  std::printf("copy bandwidth (read + write)     %7.0f GB/s\n", copy_bandwidth_gbs());
  std::mt19937_64 rng(1);
  bench_decode(1, 32768, {16, 33, 48, 64}, sms, rng);
  bench_decode(1, 32768, {33, 64}, sms, rng, 1);
  bench_decode(1, 1024, {}, sms, rng, 1);
  bench_decode(1, 1024, {}, sms, rng);
  bench_decode(8, 4096, {}, sms, rng);
  bench_decode(64, 1024, {}, sms, rng);
  bench_decode(64, 4096, {}, sms, rng);
  for (int rows : {16, 32}) {
    bench_prefill(8192, 8192, rows, rng);
    bench_prefill(2048, 8192, rows, rng);
  }
  bench_prefill(32768, 32768, 0, rng);
  std::printf("(* = decode_num_splits' choice; decode GB/s counts the K and V bytes of the context)\n");
  return 0;
}
