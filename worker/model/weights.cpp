#include "worker/model/weights.h"

#include <algorithm>

#include "common/error.h"
#include "kernels/cpu/thread_pool.h"
#include "worker/model/convert.h"
#include "worker/model/weight_slice.h"

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

using Part = WeightRows;
using Cols = WeightCols;

class Loader {
 public:
  Loader(const ModelSource& src, bool float32) : src_(src), float32_(float32) {}

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
    convert(*t, row0, rows, {row, col0, cols}, out.data() + base);
  }

  std::vector<float> get(Role r, int layer, const std::vector<int64_t>& shape) const {
    std::vector<float> v;
    append(r, layer, shape, v);
    return v;
  }

  // The parts' row ranges stacked by rows, columns `cols` of each: a view of the file per
  // part where the kernels take its type (`any_type`: whatever the type, for lookups
  // only) and the columns fall on its blocks, else float32 rows of its own. On the
  // float32 path one float32 matrix with `pad_rows` zero rows at the end.
  WeightMatrix matrix(const std::vector<Part>& parts, int layer, Cols cols, bool any_type = false,
                      int64_t pad_rows = 0) const {
    WeightMatrix w;
    w.cols = cols.count();
    std::vector<const TensorInfo*> tensors;
    for (const Part& p : parts) {
      tensors.push_back(&find_weight(src_, p.role, layer, {p.rows, cols.all}));
      w.rows += p.count();
    }
    if (float32_) {
      w.rows += pad_rows;
      w.owned.emplace_back(new float[static_cast<size_t>(w.rows * w.cols)]());
      float* dst = w.owned.back().get();
      for (size_t i = 0; i < parts.size(); ++i) {
        convert(*tensors[i], parts[i].row0, parts[i].count(), cols, dst);
        dst += parts[i].count() * w.cols;
      }
      w.slices.push_back({DType::kF32, w.rows, reinterpret_cast<const uint8_t*>(w.owned.back().get()),
                          static_cast<size_t>(w.cols) * sizeof(float), 0});
      return w;
    }
    int64_t y0 = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const TensorInfo& t = *tensors[i];
      const Part& p = parts[i];
      const size_t row_bytes = *dtype_bytes(t.dtype, cols.all);
      const auto skip = dtype_bytes(t.dtype, cols.col0);
      if ((any_type || cpu::linear_supports(t.dtype)) && skip && dtype_bytes(t.dtype, w.cols)) {
        w.slices.push_back({t.dtype, p.count(), t.data + static_cast<size_t>(p.row0) * row_bytes + *skip, row_bytes, y0});
      } else {
        w.owned.emplace_back(new float[static_cast<size_t>(p.count() * w.cols)]);
        convert(t, p.row0, p.count(), cols, w.owned.back().get());
        w.slices.push_back({DType::kF32, p.count(), reinterpret_cast<const uint8_t*>(w.owned.back().get()),
                            static_cast<size_t>(w.cols) * sizeof(float), y0});
      }
      y0 += p.count();
    }
    return w;
  }

 private:
  // Rows [row0, row0 + rows), columns `cols`, of `t` converted to float32 into dst.
  void convert(const TensorInfo& t, int64_t row0, int64_t rows, Cols cols, float* dst) const {
    const int64_t row = cols.all, col0 = cols.col0, n = cols.count();
    const size_t row_bytes = *dtype_bytes(t.dtype, row);
    // A column slice that does not start and end on a quantization block converts whole
    // rows and keeps the slice (only the slice stays in memory).
    const auto skip = dtype_bytes(t.dtype, col0);
    const bool whole_rows = !skip || !dtype_bytes(t.dtype, n);
    // Convert in row chunks on the pool: an 8B model's float32 copy is 32 GB.
    const int64_t rows_per_chunk = std::max<int64_t>(1, (int64_t{1} << 20) / row);
    const uint8_t* src = t.data + static_cast<size_t>(row0) * row_bytes;
    cpu::ThreadPool::global().parallel_for((rows + rows_per_chunk - 1) / rows_per_chunk, [&](int64_t c) {
      const int64_t r1 = std::min(rows, (c + 1) * rows_per_chunk);
      std::vector<float> full(whole_rows ? static_cast<size_t>(row) : 0);
      for (int64_t i = c * rows_per_chunk; i < r1; ++i) {
        const uint8_t* in = src + static_cast<size_t>(i) * row_bytes;
        if (!whole_rows) {
          to_f32(t.dtype, in + *skip, dst + i * n, n);
          continue;
        }
        to_f32(t.dtype, in, full.data(), row);
        std::copy(full.begin() + col0, full.begin() + col0 + n, dst + i * n);
      }
    });
  }

  const ModelSource& src_;
  bool float32_;
};

bool kernels_take(const WeightMatrix& w) {
  for (const cpu::WeightSlice& s : w.slices)
    if (!cpu::linear_supports(s.type)) return false;
  return true;
}

}  // namespace

void ModelWeights::embedding_row(int32_t token, float* out) const {
  const cpu::WeightSlice& s = embedding.slices[0];
  to_f32(s.type, s.data + static_cast<size_t>(token) * s.row_stride, out, embedding.cols);
}

ModelWeights ModelWeights::load(const ModelSource& src, const ModelConfig& c, const RankShape& s, bool float32) {
  ModelWeights w;
  w.config = c;
  w.shape = s.size > 1 ? s : RankShape::of(c, {});
  Loader ld(src, float32);
  const int64_t H = c.hidden, Q = c.q_dim(), KV = c.kv_dim(), F = c.ffn, V = c.vocab, D = c.head_dim;
  // This rank's slices: query rows/columns, KV rows, FFN rows/columns (all of them for
  // one rank).
  const int64_t q0 = int64_t{w.shape.q_head0} * D, nq = int64_t{w.shape.n_heads} * D;
  const int64_t kv0 = int64_t{w.shape.kv_head0} * D, nkv = int64_t{w.shape.n_kv_heads} * D;
  const int64_t f0 = w.shape.ffn0, nf = w.shape.ffn;
  w.embedding = ld.matrix({{Role::kEmbed, V}}, 0, {H}, true);
  w.output_norm = ld.get(Role::kOutNorm, 0, {H});
  const Role head = c.tied_embeddings ? Role::kEmbed : Role::kOutput;
  if (s.size > 1)  // this rank's vocabulary rows (padded to the common stride on the float32 path)
    w.lm_head = ld.matrix({{head, V, w.shape.vocab0, w.shape.vocab}}, 0, {H}, false, w.shape.vocab_stride - w.shape.vocab);
  else if (!c.tied_embeddings || !kernels_take(w.embedding))
    w.lm_head = ld.matrix({{head, V}}, 0, {H});
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    L.attn_norm = ld.get(Role::kAttnNorm, l, {H});
    L.wqkv = ld.matrix({{Role::kQ, Q, q0, nq}, {Role::kK, KV, kv0, nkv}, {Role::kV, KV, kv0, nkv}}, l, {H});
    if (c.qkv_bias) {
      ld.append(Role::kQBias, l, {Q}, L.bqkv, 0, 1, q0, nq);
      ld.append(Role::kKBias, l, {KV}, L.bqkv, 0, 1, kv0, nkv);
      ld.append(Role::kVBias, l, {KV}, L.bqkv, 0, 1, kv0, nkv);
    }
    if (c.qk_norm) {
      L.q_norm = ld.get(Role::kQNorm, l, {D});
      L.k_norm = ld.get(Role::kKNorm, l, {D});
    }
    L.wo = ld.matrix({{Role::kO, H}}, l, {Q, q0, nq});
    L.ffn_norm = ld.get(Role::kFfnNorm, l, {H});
    L.w_gate_up = ld.matrix({{Role::kGate, F, f0, nf}, {Role::kUp, F, f0, nf}}, l, {H});
    L.w_down = ld.matrix({{Role::kDown, H}}, l, {F, f0, nf});
  }
  return w;
}

}  // namespace sy
