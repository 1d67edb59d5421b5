#include "worker/model/weights.h"

#include <algorithm>

#include "common/error.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/model/convert.h"

namespace sy {
namespace {

using Role = WeightRole;

}  // namespace

std::string weight_tensor_name(ModelFormat fmt, WeightRole r, int layer) {
  const std::string L = std::to_string(layer);
  if (fmt == ModelFormat::kGguf) {
    const std::string b = "blk." + L + ".";
    switch (r) {
      case Role::kEmbed: return "token_embd.weight";
      case Role::kOutNorm: return "output_norm.weight";
      case Role::kOutput: return "output.weight";
      case Role::kAttnNorm: return b + "attn_norm.weight";
      case Role::kQ: return b + "attn_q.weight";
      case Role::kK: return b + "attn_k.weight";
      case Role::kV: return b + "attn_v.weight";
      case Role::kQBias: return b + "attn_q.bias";
      case Role::kKBias: return b + "attn_k.bias";
      case Role::kVBias: return b + "attn_v.bias";
      case Role::kQNorm: return b + "attn_q_norm.weight";
      case Role::kKNorm: return b + "attn_k_norm.weight";
      case Role::kO: return b + "attn_output.weight";
      case Role::kFfnNorm: return b + "ffn_norm.weight";
      case Role::kGate: return b + "ffn_gate.weight";
      case Role::kUp: return b + "ffn_up.weight";
      case Role::kDown: return b + "ffn_down.weight";
    }
  }
  const std::string b = "model.layers." + L + ".";
  switch (r) {
    case Role::kEmbed: return "model.embed_tokens.weight";
    case Role::kOutNorm: return "model.norm.weight";
    case Role::kOutput: return "lm_head.weight";
    case Role::kAttnNorm: return b + "input_layernorm.weight";
    case Role::kQ: return b + "self_attn.q_proj.weight";
    case Role::kK: return b + "self_attn.k_proj.weight";
    case Role::kV: return b + "self_attn.v_proj.weight";
    case Role::kQBias: return b + "self_attn.q_proj.bias";
    case Role::kKBias: return b + "self_attn.k_proj.bias";
    case Role::kVBias: return b + "self_attn.v_proj.bias";
    case Role::kQNorm: return b + "self_attn.q_norm.weight";
    case Role::kKNorm: return b + "self_attn.k_norm.weight";
    case Role::kO: return b + "self_attn.o_proj.weight";
    case Role::kFfnNorm: return b + "post_attention_layernorm.weight";
    case Role::kGate: return b + "mlp.gate_proj.weight";
    case Role::kUp: return b + "mlp.up_proj.weight";
    case Role::kDown: return b + "mlp.down_proj.weight";
  }
  return {};
}

const TensorInfo& find_weight(const ModelSource& src, WeightRole r, int layer, const std::vector<int64_t>& shape) {
  const std::string name = weight_tensor_name(src.format(), r, layer);
  const TensorInfo* t = src.find_tensor(name);
  if (!t) throw ModelFileError(src.path() + ": missing tensor '" + name + "'");
  if (t->shape != shape) {
    TensorInfo want;
    want.shape = shape;
    throw ModelFileError(src.path() + ": tensor '" + name + "' has shape " + t->shape_string() + ", expected " + want.shape_string());
  }
  return *t;
}

namespace {

class Loader {
 public:
  Loader(const ModelSource& src) : src_(src) {}

  // Appends the tensor, converted to float32, to `out` after checking its shape: rows
  // [row0, row0 + rows) and columns [col0, col0 + cols) of it (a tensor-parallel rank's
  // slice; -1: all), read from the mapped file and nothing else. A 1-D tensor is one row.
  void append(Role r, int layer, const std::vector<int64_t>& shape, std::vector<float>& out, int64_t row0 = 0,
              int64_t rows = -1, int64_t col0 = 0, int64_t cols = -1) const {
    const TensorInfo* t = &find_weight(src_, r, layer, shape);
    const int64_t row = shape.back();
    if (rows < 0) rows = t->numel() / row - row0;
    if (cols < 0) cols = row - col0;
    const size_t base = out.size();
    out.resize(base + static_cast<size_t>(rows * cols));
    const size_t row_bytes = *dtype_bytes(t->dtype, row);
    // A column slice that does not start and end on a quantization block converts whole
    // rows and keeps the slice (only the slice stays in memory).
    const auto skip = dtype_bytes(t->dtype, col0);
    const bool whole_rows = !skip || !dtype_bytes(t->dtype, cols);
    // Convert in row chunks on the pool: an 8B model's float32 copy is 32 GB.
    const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 20) / row);
    float* dst = out.data() + base;
    const uint8_t* src = t->data + static_cast<size_t>(row0) * row_bytes;
    cpu::ThreadPool::global().parallel_for((rows + rows_per_chunk - 1) / rows_per_chunk, [&](int64_t c) {
      const int64_t r1 = std::min(rows, (c + 1) * rows_per_chunk);
      std::vector<float> full(whole_rows ? static_cast<size_t>(row) : 0);
      for (int64_t i = c * rows_per_chunk; i < r1; ++i) {
        const uint8_t* in = src + static_cast<size_t>(i) * row_bytes;
        if (!whole_rows) {
          to_f32(t->dtype, in + *skip, dst + i * cols, cols);
          continue;
        }
        to_f32(t->dtype, in, full.data(), row);
        std::copy(full.begin() + col0, full.begin() + col0 + cols, dst + i * cols);
      }
    });
  }

  std::vector<float> get(Role r, int layer, const std::vector<int64_t>& shape) const {
    std::vector<float> v;
    append(r, layer, shape, v);
    return v;
  }

 private:
  const ModelSource& src_;
};

}  // namespace

ModelWeights ModelWeights::load(const ModelSource& src, const ModelConfig& c, const RankShape& s) {
  ModelWeights w;
  w.config = c;
  w.shape = s.size > 1 ? s : RankShape::of(c, {});
  Loader ld(src);
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, V = c.vocab, D = c.head_dim;
  // This rank's slices: query rows/columns, KV rows, FFN rows/columns (all of them for
  // one rank).
  const int64_t q0 = int64_t{w.shape.q_head0} * D, nq = int64_t{w.shape.n_heads} * D;
  const int64_t kv0 = int64_t{w.shape.kv_head0} * D, nkv = int64_t{w.shape.n_kv_heads} * D;
  const int64_t f0 = w.shape.ffn0, nf = w.shape.ffn;
  w.embedding = ld.get(Role::kEmbed, 0, {V, H});
  w.output_norm = ld.get(Role::kOutNorm, 0, {H});
  if (s.size > 1) {  // this rank's vocabulary rows, padded to the common stride
    ld.append(c.tied_embeddings ? Role::kEmbed : Role::kOutput, 0, {V, H}, w.lm_head, w.shape.vocab0, w.shape.vocab);
    w.lm_head.resize(static_cast<size_t>(int64_t{w.shape.vocab_stride} * H), 0.0f);
  } else if (!c.tied_embeddings) {
    w.lm_head = ld.get(Role::kOutput, 0, {V, H});
  }
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = ld.get(Role::kAttnNorm, l, {H});
    L.wqkv.reserve(static_cast<size_t>((nq + 2 * nkv) * H));
    ld.append(Role::kQ, l, {Q, H}, L.wqkv, q0, nq);
    ld.append(Role::kK, l, {KV, H}, L.wqkv, kv0, nkv);
    ld.append(Role::kV, l, {KV, H}, L.wqkv, kv0, nkv);
    if (c.qkv_bias) {
      ld.append(Role::kQBias, l, {Q}, L.bqkv, 0, 1, q0, nq);
      ld.append(Role::kKBias, l, {KV}, L.bqkv, 0, 1, kv0, nkv);
      ld.append(Role::kVBias, l, {KV}, L.bqkv, 0, 1, kv0, nkv);
    }
    if (c.qk_norm) {
      L.q_norm = ld.get(Role::kQNorm, l, {D});
      L.k_norm = ld.get(Role::kKNorm, l, {D});
    }
    ld.append(Role::kO, l, {H, Q}, L.wo, 0, -1, q0, nq);
    L.ffn_norm = ld.get(Role::kFfnNorm, l, {H});
    L.w_gate_up.reserve(static_cast<size_t>(2 * nf * H));
    ld.append(Role::kGate, l, {F, H}, L.w_gate_up, f0, nf);
    ld.append(Role::kUp, l, {F, H}, L.w_gate_up, f0, nf);
    ld.append(Role::kDown, l, {H, F}, L.w_down, 0, -1, f0, nf);
  }
  return w;
}

}  // namespace sy
