#include "worker/model/weights.h"

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

  // Appends the tensor, converted to float32, to `out` after checking its shape.
  void append(Role r, int layer, const std::vector<int64_t>& shape, std::vector<float>& out) const {
    const TensorInfo* t = &find_weight(src_, r, layer, shape);
    const size_t base = out.size();
    const int64_t n = t->numel();
    out.resize(base + static_cast<size_t>(n));
    // Convert in row chunks on the pool: an 8B model's float32 copy is 32 GB.
    const int64_t row = shape.back();
    const int64_t rows = n / row;
    const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 20) / row);
    const size_t row_bytes = *dtype_bytes(t->dtype, row);
    float* dst = out.data() + base;
    cpu::ThreadPool::global().parallel_for((rows + rows_per_chunk - 1) / rows_per_chunk, [&](int64_t c) {
      const int64_t r0 = c * rows_per_chunk;
      const int64_t r1 = std::min(rows, r0 + rows_per_chunk);
      to_f32(t->dtype, t->data + static_cast<size_t>(r0) * row_bytes, dst + r0 * row, (r1 - r0) * row);
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

ModelWeights ModelWeights::load(const ModelSource& src, const ModelConfig& c) {
  ModelWeights w;
  w.config = c;
  Loader ld(src);
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, V = c.vocab, D = c.head_dim;
  w.embedding = ld.get(Role::kEmbed, 0, {V, H});
  w.output_norm = ld.get(Role::kOutNorm, 0, {H});
  if (!c.tied_embeddings) w.lm_head = ld.get(Role::kOutput, 0, {V, H});
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = ld.get(Role::kAttnNorm, l, {H});
    L.wqkv.reserve(static_cast<size_t>((Q + 2 * KV) * H));
    ld.append(Role::kQ, l, {Q, H}, L.wqkv);
    ld.append(Role::kK, l, {KV, H}, L.wqkv);
    ld.append(Role::kV, l, {KV, H}, L.wqkv);
    if (c.qkv_bias) {
      ld.append(Role::kQBias, l, {Q}, L.bqkv);
      ld.append(Role::kKBias, l, {KV}, L.bqkv);
      ld.append(Role::kVBias, l, {KV}, L.bqkv);
    }
    if (c.qk_norm) {
      L.q_norm = ld.get(Role::kQNorm, l, {D});
      L.k_norm = ld.get(Role::kKNorm, l, {D});
    }
    L.wo = ld.get(Role::kO, l, {H, Q});
    L.ffn_norm = ld.get(Role::kFfnNorm, l, {H});
    L.w_gate_up.reserve(static_cast<size_t>(2 * F * H));
    ld.append(Role::kGate, l, {F, H}, L.w_gate_up);
    ld.append(Role::kUp, l, {F, H}, L.w_gate_up);
    L.w_down = ld.get(Role::kDown, l, {H, F});
  }
  return w;
}

}  // namespace sy
