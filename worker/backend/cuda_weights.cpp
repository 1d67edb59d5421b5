#include "worker/backend/cuda_weights.h"

#include <cstring>
#include <stdexcept>

#include "common/half.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/model/convert.h"
#include "worker/model/weights.h"

namespace sy {
namespace {

// Rows converted per pool task: an 8B model's matrices are converted on every core.
constexpr int64_t kChunkElements = int64_t{1} << 20;

struct Part {
  WeightRole role;
  int64_t rows;
};

class Uploader {
 public:
  Uploader(const ModelSource& src, CudaModelWeights& w) : src_(src), w_(w) {}

  void* allocate(size_t bytes) {
    cuda::DeviceBuffer b;
    check(b.allocate(bytes), "allocating " + std::to_string(bytes) + " bytes of weights");
    w_.device_bytes += bytes;
    w_.buffers.push_back(std::move(b));
    return w_.buffers.back().get();
  }

  void copy(void* dst, const void* src, size_t bytes) {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "uploading weights");
  }

  // A vector in fp32 (norms, biases): the parts' tensors one after the other.
  const float* f32(const std::vector<Part>& parts, int layer) {
    std::vector<float> host;
    for (const Part& p : parts) {
      const TensorInfo& t = find_weight(src_, p.role, layer, {p.rows});
      const size_t base = host.size();
      host.resize(base + static_cast<size_t>(p.rows));
      to_f32(t.dtype, t.data, host.data() + base, p.rows);
    }
    auto* d = static_cast<float*>(allocate(host.size() * sizeof(float)));
    copy(d, host.data(), host.size() * sizeof(float));
    return d;
  }

  // A matrix [Σ rows, cols] from the parts' tensors stacked by rows. Kept in Q8_0 when
  // every part is stored so and q8_0_ok; converted to bf16 otherwise.
  cuda::LinearWeight matrix(const std::vector<Part>& parts, int layer, int64_t cols, bool q8_0_ok) {
    std::vector<const TensorInfo*> tensors;
    bool all_q8_0 = q8_0_ok && cols % kQ8_0BlockSize == 0;
    cuda::LinearWeight lw;
    lw.k = cols;
    for (const Part& p : parts) {
      tensors.push_back(&find_weight(src_, p.role, layer, {p.rows, cols}));
      all_q8_0 = all_q8_0 && tensors.back()->dtype == DType::kQ8_0;
      lw.n += p.rows;
    }
    if (all_q8_0) {
      auto* quants = static_cast<int8_t*>(allocate(static_cast<size_t>(lw.n * cols)));
      auto* scales =
          static_cast<uint16_t*>(allocate(static_cast<size_t>(lw.n * cols / kQ8_0BlockSize) * 2));
      int64_t row0 = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        upload_q8_0(*tensors[i], parts[i].rows, cols, quants + row0 * cols,
                    scales + row0 * cols / kQ8_0BlockSize);
        row0 += parts[i].rows;
      }
      lw.q8_0 = {quants, reinterpret_cast<const __half*>(scales), lw.n, cols};
      w_.max_q8_0_elements = std::max(w_.max_q8_0_elements, static_cast<size_t>(lw.n * cols));
      return lw;
    }
    auto* d = static_cast<uint16_t*>(allocate(static_cast<size_t>(lw.n * cols) * 2));
    int64_t row0 = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      upload_bf16(*tensors[i], parts[i].rows * cols, d + row0 * cols);
      row0 += parts[i].rows;
    }
    lw.bf16 = reinterpret_cast<const __nv_bfloat16*>(d);
    return lw;
  }

 private:
  static void check(cudaError_t e, const std::string& what) {
    if (e != cudaSuccess)
      throw std::runtime_error("cuda backend: " + what + ": " + cudaGetErrorString(e));
  }

  // bf16 files go up as stored; other types are converted on the pool first.
  void upload_bf16(const TensorInfo& t, int64_t n, uint16_t* dst) {
    if (t.dtype == DType::kBF16) {
      copy(dst, t.data, static_cast<size_t>(n) * 2);
      return;
    }
    std::vector<uint16_t> host(static_cast<size_t>(n));
    const size_t chunk_bytes = *dtype_bytes(t.dtype, kChunkElements);
    cpu::ThreadPool::global().parallel_for(
        (n + kChunkElements - 1) / kChunkElements, [&](int64_t c) {
          const int64_t i0 = c * kChunkElements, len = std::min(kChunkElements, n - i0);
          std::vector<float> f(static_cast<size_t>(len));
          to_f32(t.dtype, t.data + static_cast<size_t>(c) * chunk_bytes, f.data(), len);
          for (int64_t i = 0; i < len; ++i)
            host[static_cast<size_t>(i0 + i)] = f32_to_bf16(f[static_cast<size_t>(i)]);
        });
    copy(dst, host.data(), host.size() * 2);
  }

  // GGUF's 34-byte blocks split into the device layout: quants [rows, cols] and scales
  // [rows, cols / 32].
  void upload_q8_0(const TensorInfo& t, int64_t rows, int64_t cols, int8_t* quants,
                   uint16_t* scales) {
    const int64_t blocks = rows * cols / kQ8_0BlockSize;
    std::vector<int8_t> q(static_cast<size_t>(rows * cols));
    std::vector<uint16_t> s(static_cast<size_t>(blocks));
    const auto* b = reinterpret_cast<const BlockQ8_0*>(t.data);
    const int64_t per_task = kChunkElements / kQ8_0BlockSize;
    cpu::ThreadPool::global().parallel_for((blocks + per_task - 1) / per_task, [&](int64_t c) {
      for (int64_t i = c * per_task; i < std::min(blocks, (c + 1) * per_task); ++i) {
        s[static_cast<size_t>(i)] = b[i].d;
        std::memcpy(&q[static_cast<size_t>(i * kQ8_0BlockSize)], b[i].qs, kQ8_0BlockSize);
      }
    });
    copy(quants, q.data(), q.size());
    copy(scales, s.data(), s.size() * 2);
  }

  const ModelSource& src_;
  CudaModelWeights& w_;
};

}  // namespace

CudaModelWeights CudaModelWeights::upload(const ModelSource& src, const ModelConfig& c) {
  CudaModelWeights w;
  Uploader up(src, w);
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, V = c.vocab,
                D = c.head_dim;
  using R = WeightRole;
  const cuda::LinearWeight embedding = up.matrix({{R::kEmbed, V}}, 0, H, false);
  w.embedding = embedding.bf16;
  if (c.tied_embeddings)
    w.lm_head = find_weight(src, R::kEmbed, 0, {V, H}).dtype == DType::kQ8_0
                    ? up.matrix({{R::kEmbed, V}}, 0, H, true)
                    : embedding;
  else
    w.lm_head = up.matrix({{R::kOutput, V}}, 0, H, true);
  w.output_norm = up.f32({{R::kOutNorm, H}}, 0);
  const std::vector<float> inv_freq =
      cpu::rope_inv_freq(c.rope_dim, c.rope_theta, c.rope_freq_factors, c.rope_inv_freq_bf16);
  auto* freq = static_cast<float*>(up.allocate(inv_freq.size() * sizeof(float)));
  up.copy(freq, inv_freq.data(), inv_freq.size() * sizeof(float));
  w.rope_inv_freq = freq;
  for (int l = 0; l < c.n_layers; ++l) {
    CudaLayerWeights L;
    L.attn_norm = up.f32({{R::kAttnNorm, H}}, l);
    L.wqkv = up.matrix({{R::kQ, Q}, {R::kK, KV}, {R::kV, KV}}, l, H, true);
    if (c.qkv_bias) L.bqkv = up.f32({{R::kQBias, Q}, {R::kKBias, KV}, {R::kVBias, KV}}, l);
    if (c.qk_norm) {
      L.q_norm = up.f32({{R::kQNorm, D}}, l);
      L.k_norm = up.f32({{R::kKNorm, D}}, l);
    }
    L.wo = up.matrix({{R::kO, H}}, l, Q, true);
    L.ffn_norm = up.f32({{R::kFfnNorm, H}}, l);
    L.w_gate_up = up.matrix({{R::kGate, F}, {R::kUp, F}}, l, H, true);
    L.w_down = up.matrix({{R::kDown, H}}, l, F, true);
    w.layers.push_back(L);
  }
  return w;
}

}  // namespace sy
