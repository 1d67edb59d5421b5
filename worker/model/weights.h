// Model weights in float32 host memory, loaded from a GGUF file or a Hugging Face
// directory and checked against the configuration. Q/K/V and gate/up projections are
// concatenated so that each is one GEMM.
#pragma once

#include <string>
#include <vector>

#include "common/model_source.h"
#include "worker/model/model_config.h"
#include "worker/model/rank_shape.h"

namespace sy {

struct LayerWeights {
  std::vector<float> attn_norm;  // [hidden]
  std::vector<float> wqkv;       // [q_dim + 2 kv_dim, hidden]: q rows, then k, then v
  std::vector<float> bqkv;       // [q_dim + 2 kv_dim], empty without QKV bias
  std::vector<float> q_norm;     // [head_dim], empty without Q/K norm
  std::vector<float> k_norm;     // [head_dim]
  std::vector<float> wo;         // [hidden, q_dim]
  std::vector<float> ffn_norm;   // [hidden]
  std::vector<float> w_gate_up;  // [2 ffn, hidden]: gate rows, then up
  std::vector<float> w_down;     // [hidden, ffn]
};

// Tensor roles, named per format by weight_tensor_name.
enum class WeightRole { kEmbed, kOutNorm, kOutput, kAttnNorm, kQ, kK, kV, kQBias, kKBias, kVBias, kQNorm, kKNorm, kO, kFfnNorm, kGate, kUp, kDown };

// The stored name of a role's tensor in `layer` (ignored for whole-model tensors).
std::string weight_tensor_name(ModelFormat fmt, WeightRole r, int layer);

// The tensor of a role, after checking its shape. Throws ModelFileError naming the
// tensor when it is missing or has another shape. Backends that keep weights in their
// stored format (the cuda backend's Q8_0 path) read them through this.
const TensorInfo& find_weight(const ModelSource& src, WeightRole r, int layer, const std::vector<int64_t>& shape);

struct ModelWeights {
  ModelConfig config;  // the whole model's
  RankShape shape;     // the slice these weights are (the whole model for one rank)
  std::vector<float> embedding;    // [vocab, hidden]
  std::vector<float> output_norm;  // [hidden]
  // [vocab, hidden]; empty when tied to the embedding. A tensor-parallel rank's:
  // [shape.vocab_stride, hidden], its vocabulary rows then zero rows.
  std::vector<float> lm_head;
  std::vector<LayerWeights> layers;

  const float* output_matrix() const { return lm_head.empty() ? embedding.data() : lm_head.data(); }

  // Throws ModelFileError naming the tensor on a missing tensor or a shape mismatch.
  // `shape`: a tensor-parallel rank's slice (RankShape::of), read alone from the mapped
  // file; default: the whole model. Layer tensors then hold the rank's rows or columns
  // (wqkv [nq + 2 nkv, hidden], wo [hidden, nq], w_gate_up [2 ffn_r, hidden], w_down
  // [hidden, ffn_r]); the embedding and norms are whole.
  static ModelWeights load(const ModelSource& src, const ModelConfig& config, const RankShape& shape = {});
};

}  // namespace sy
