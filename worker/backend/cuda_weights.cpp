#include "worker/backend/cuda_weights.h"

#include <cstring>
#include <optional>
#include <stdexcept>

#include "common/half.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/model/convert.h"
#include "worker/model/weight_slice.h"
#include "worker/model/weights.h"

namespace sy {
namespace {

// Rows converted per pool task: an 8B model's matrices are converted on every core.
constexpr int64_t kChunkElements = int64_t{1} << 20;

// Q8_0 on the device (kernels/cuda/q8_0_gemv.cuh): quants [n, k] and scales [n, k / 32],
// which is GGUF's 34-byte block split as the other formats' are.
constexpr cuda::QuantLayout kQ8_0Split = {kQ8_0BlockSize, 34, 2, kQ8_0BlockSize, 0};

// The device format a stored type stays in other than Q8_0 (quant_matrix.cuh), if any.
std::optional<cuda::QuantType> quant_type(DType t) {
  switch (t) {
    case DType::kQ4_0: return cuda::QuantType::kQ4_0;
    case DType::kQ4_K: return cuda::QuantType::kQ4_K;
    case DType::kQ5_K: return cuda::QuantType::kQ5_K;
    case DType::kQ6_K: return cuda::QuantType::kQ6_K;
    default: return std::nullopt;
  }
}

bool is_quantized(DType t) {
  return t == DType::kQ8_0 || quant_type(t).has_value();
}

using Part = WeightRows;
using Cols = WeightCols;

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

  // A vector in fp32 (norms, biases): the parts' tensors (their ranges) one after the
  // other.
  const float* f32(const std::vector<Part>& parts, int layer) {
    std::vector<float> host;
    for (const Part& p : parts) {
      const TensorInfo& t = find_weight(src_, p.role, layer, {p.rows});
      std::vector<float> whole(static_cast<size_t>(p.rows));
      to_f32(t.dtype, t.data, whole.data(), p.rows);
      host.insert(host.end(), whole.begin() + p.row0, whole.begin() + p.row0 + p.count());
    }
    auto* d = static_cast<float*>(allocate(host.size() * sizeof(float)));
    copy(d, host.data(), host.size() * sizeof(float));
    return d;
  }

  // A matrix [Σ taken rows + pad_rows, taken cols] from the parts' row ranges stacked by
  // rows, columns `cols` of each (a tensor-parallel rank's slice); `pad_rows` zero rows
  // at the end (an LM-head slice padded to the common stride). With quant_ok, kept in
  // the file's quantized format where the column range falls on its blocks: Q8_0 when
  // every part is Q8_0, else each run of parts in one of Q4_0/Q4_K/Q5_K/Q6_K as a part
  // of the device weight (a Q4_K_M file's Q and K in Q4_K, V in Q6_K: two); converted to
  // bf16 otherwise.
  cuda::LinearWeight matrix(const std::vector<Part>& parts, int layer, Cols cols, bool quant_ok, int64_t pad_rows = 0) {
    std::vector<const TensorInfo*> tensors;
    const int64_t K = cols.count();
    auto on_blocks = [&](int values) { return cols.all % values == 0 && cols.col0 % values == 0 && K % values == 0; };
    bool all_q8_0 = quant_ok && on_blocks(kQ8_0BlockSize);
    bool all_quant = quant_ok && static_cast<int>(parts.size()) <= cuda::kMaxQuantParts;
    cuda::LinearWeight lw;
    lw.k = K;
    for (const Part& p : parts) {
      tensors.push_back(&find_weight(src_, p.role, layer, {p.rows, cols.all}));
      const std::optional<cuda::QuantType> qt = quant_type(tensors.back()->dtype);
      all_q8_0 = all_q8_0 && tensors.back()->dtype == DType::kQ8_0;
      all_quant = all_quant && qt && on_blocks(cuda::quant_layout(*qt).block_values);
      lw.n += p.count();
    }
    lw.n += pad_rows;
    if (all_q8_0) {
      auto* quants = static_cast<uint8_t*>(allocate(static_cast<size_t>(lw.n * K)));
      auto* scales = static_cast<uint16_t*>(allocate(static_cast<size_t>(lw.n * K / kQ8_0BlockSize) * 2));
      int64_t row0 = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        split_blocks(*tensors[i], parts[i], cols, kQ8_0Split, quants + row0 * K, scales + row0 * K / kQ8_0BlockSize);
        row0 += parts[i].count();
      }
      zero(quants + row0 * K, static_cast<size_t>(pad_rows * K));
      zero(scales + row0 * K / kQ8_0BlockSize, static_cast<size_t>(pad_rows * K / kQ8_0BlockSize) * 2);
      lw.q8_0 = {reinterpret_cast<const int8_t*>(quants), reinterpret_cast<const __half*>(scales), lw.n, K};
      w_.max_expand_elements = std::max(w_.max_expand_elements, static_cast<size_t>(lw.n * K));
      return lw;
    }
    if (all_quant) {
      // Consecutive parts of one format share a device matrix (one GEMV launch); the
      // padding rows (zero blocks: zero values in every format) join the last.
      for (size_t first = 0; first < parts.size();) {
        const cuda::QuantType qt = *quant_type(tensors[first]->dtype);
        size_t end = first + 1;
        while (end < parts.size() && quant_type(tensors[end]->dtype) == qt) ++end;
        int64_t rows = end == parts.size() ? pad_rows : 0;
        for (size_t i = first; i < end; ++i) rows += parts[i].count();
        const cuda::QuantLayout l = cuda::quant_layout(qt);
        const int64_t row_blocks = K / l.block_values;
        auto* body = static_cast<uint8_t*>(allocate(static_cast<size_t>(rows * row_blocks * l.body_bytes)));
        auto* d = l.d_offset >= 0 ? static_cast<uint16_t*>(allocate(static_cast<size_t>(rows * row_blocks) * 2)) : nullptr;
        int64_t row0 = 0;
        for (size_t i = first; i < end; ++i) {
          split_blocks(*tensors[i], parts[i], cols, l, body + row0 * row_blocks * l.body_bytes, d ? d + row0 * row_blocks : nullptr);
          row0 += parts[i].count();
        }
        zero(body + row0 * row_blocks * l.body_bytes, static_cast<size_t>((rows - row0) * row_blocks * l.body_bytes));
        if (d) zero(d + row0 * row_blocks, static_cast<size_t>((rows - row0) * row_blocks) * 2);
        lw.quant[lw.quant_parts++] = {qt, body, reinterpret_cast<const __half*>(d), rows, K};
        first = end;
      }
      w_.max_expand_elements = std::max(w_.max_expand_elements, static_cast<size_t>(lw.n * K));
      return lw;
    }
    auto* d = static_cast<uint16_t*>(allocate(static_cast<size_t>(lw.n * K) * 2));
    int64_t row0 = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      upload_bf16(*tensors[i], parts[i], cols, d + row0 * K);
      row0 += parts[i].count();
    }
    zero(d + row0 * K, static_cast<size_t>(pad_rows * K) * 2);
    lw.bf16 = reinterpret_cast<const __nv_bfloat16*>(d);
    return lw;
  }

 private:
  static void check(cudaError_t e, const std::string& what) {
    if (e != cudaSuccess)
      throw std::runtime_error("cuda backend: " + what + ": " + cudaGetErrorString(e));
  }

  void zero(void* dst, size_t bytes) {
    if (bytes) check(cudaMemset(dst, 0, bytes), "clearing padding rows");
  }

  // Whole bf16 tensors go up as stored; slices and other types are cut and converted on
  // the pool first (only the slice is kept on the host).
  void upload_bf16(const TensorInfo& t, const Part& p, Cols cols, uint16_t* dst) {
    const int64_t rows = p.count(), K = cols.count(), row = cols.all;
    const size_t row_bytes = *dtype_bytes(t.dtype, row);
    const uint8_t* src = t.data + static_cast<size_t>(p.row0) * row_bytes;
    if (t.dtype == DType::kBF16 && cols.whole()) {
      copy(dst, src, static_cast<size_t>(rows * K) * 2);
      return;
    }
    std::vector<uint16_t> host(static_cast<size_t>(rows * K));
    const int64_t rows_per_task = std::max<int64_t>(1, kChunkElements / row);
    cpu::ThreadPool::global().parallel_for((rows + rows_per_task - 1) / rows_per_task, [&](int64_t c) {
      std::vector<float> f(static_cast<size_t>(row));
      for (int64_t r = c * rows_per_task; r < std::min(rows, (c + 1) * rows_per_task); ++r) {
        const uint8_t* in = src + static_cast<size_t>(r) * row_bytes;
        uint16_t* out = host.data() + r * K;
        if (t.dtype == DType::kBF16) {
          std::memcpy(out, in + cols.col0 * 2, static_cast<size_t>(K) * 2);
          continue;
        }
        to_f32(t.dtype, in, f.data(), row);
        for (int64_t i = 0; i < K; ++i) out[i] = f32_to_bf16(f[static_cast<size_t>(cols.col0 + i)]);
      }
    });
    copy(dst, host.data(), host.size() * 2);
  }

  // The part's rows, the blocks of the column range, split into the device layout:
  // each block's body into `body` and its scale (d_offset >= 0) into `d`.
  void split_blocks(const TensorInfo& t, const Part& p, Cols cols, const cuda::QuantLayout& l, uint8_t* body, uint16_t* d) {
    const int64_t rows = p.count(), kb = cols.count() / l.block_values;
    const int64_t row_blocks = cols.all / l.block_values, b0 = cols.col0 / l.block_values;
    std::vector<uint8_t> hb(static_cast<size_t>(rows * kb * l.body_bytes));
    std::vector<uint16_t> hd(l.d_offset >= 0 ? static_cast<size_t>(rows * kb) : 0);
    const uint8_t* blocks = t.data + static_cast<size_t>(p.row0 * row_blocks) * l.file_bytes;
    const int64_t rows_per_task = std::max<int64_t>(1, kChunkElements / cols.all);
    cpu::ThreadPool::global().parallel_for((rows + rows_per_task - 1) / rows_per_task, [&](int64_t c) {
      for (int64_t r = c * rows_per_task; r < std::min(rows, (c + 1) * rows_per_task); ++r)
        for (int64_t i = 0; i < kb; ++i) {
          const uint8_t* b = blocks + static_cast<size_t>(r * row_blocks + b0 + i) * l.file_bytes;
          const size_t o = static_cast<size_t>(r * kb + i);
          std::memcpy(&hb[o * l.body_bytes], b + l.body_offset, static_cast<size_t>(l.body_bytes));
          if (l.d_offset >= 0) std::memcpy(&hd[o], b + l.d_offset, 2);
        }
    });
    copy(body, hb.data(), hb.size());
    if (d) copy(d, hd.data(), hd.size() * 2);
  }

  const ModelSource& src_;
  CudaModelWeights& w_;
};

}  // namespace

CudaModelWeights CudaModelWeights::upload(const ModelSource& src, const ModelConfig& c, const RankShape& shape) {
  CudaModelWeights w;
  Uploader up(src, w);
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, V = c.vocab, D = c.head_dim;
  // This rank's slices (all of each for a whole model): query heads, KV heads, FFN
  // columns, vocabulary rows.
  const int64_t q0 = int64_t{shape.q_head0} * D, nq = int64_t{shape.n_heads} * D;
  const int64_t kv0 = int64_t{shape.kv_head0} * D, nkv = int64_t{shape.n_kv_heads} * D;
  const int64_t f0 = shape.ffn0, nf = shape.ffn;
  using R = WeightRole;
  // The embedding: this rank's vocabulary rows (vocabulary-parallel, the ranks' rows
  // summed after the lookup) or all of them.
  const cuda::LinearWeight embedding = up.matrix({{R::kEmbed, V, shape.vocab0, shape.whole() ? -1 : shape.vocab}}, 0, {H}, false);
  w.embedding = embedding.bf16;
  const R head = c.tied_embeddings ? R::kEmbed : R::kOutput;
  if (!shape.whole())  // this rank's vocabulary rows, padded with zero rows to the stride
    w.lm_head = up.matrix({{head, V, shape.vocab0, shape.vocab}}, 0, {H}, true, shape.vocab_stride - shape.vocab);
  else if (c.tied_embeddings)
    w.lm_head = is_quantized(find_weight(src, R::kEmbed, 0, {V, H}).dtype) ? up.matrix({{R::kEmbed, V}}, 0, {H}, true) : embedding;
  else
    w.lm_head = up.matrix({{R::kOutput, V}}, 0, {H}, true);
  w.output_norm = up.f32({{R::kOutNorm, H}}, 0);
  const std::vector<float> inv_freq = cpu::rope_inv_freq(c.rope_dim, c.rope_theta, c.rope_freq_factors, c.rope_inv_freq_bf16);
  auto* freq = static_cast<float*>(up.allocate(inv_freq.size() * sizeof(float)));
  up.copy(freq, inv_freq.data(), inv_freq.size() * sizeof(float));
  w.rope_inv_freq = freq;
  for (int l = 0; l < c.n_layers; ++l) {
    CudaLayerWeights L;
    L.attn_norm = up.f32({{R::kAttnNorm, H}}, l);
    L.wqkv = up.matrix({{R::kQ, Q, q0, nq}, {R::kK, KV, kv0, nkv}, {R::kV, KV, kv0, nkv}}, l, {H}, true);
    if (c.qkv_bias) L.bqkv = up.f32({{R::kQBias, Q, q0, nq}, {R::kKBias, KV, kv0, nkv}, {R::kVBias, KV, kv0, nkv}}, l);
    if (c.qk_norm) {
      L.q_norm = up.f32({{R::kQNorm, D}}, l);
      L.k_norm = up.f32({{R::kKNorm, D}}, l);
    }
    L.wo = up.matrix({{R::kO, H}}, l, {Q, q0, nq}, true);
    L.ffn_norm = up.f32({{R::kFfnNorm, H}}, l);
    L.w_gate_up = up.matrix({{R::kGate, F, f0, nf}, {R::kUp, F, f0, nf}}, l, {H}, true);
    L.w_down = up.matrix({{R::kDown, H}}, l, {F, f0, nf}, true);
    w.layers.push_back(L);
  }
  return w;
}

}  // namespace sy
