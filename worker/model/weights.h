// Model weights in host memory for the CPU backend, loaded from a GGUF file or a Hugging
// Face directory and checked against the configuration. Linear layers are WeightMatrix
// (weight_matrix.h): views of the mapped file in its stored type (kernels/cpu/linear
// takes every type the readers take), float32 where a column slice cuts a block or on
// the float32 reference path. Q/K/V and gate/up projections are one matrix each (one
// product), as slices. Norms and biases are float32. Views point into `src`'s mapping:
// the source outlives the weights.
#pragma once

#include <string>
#include <vector>

#include "common/model_source.h"
#include "worker/model/weight_matrix.h"
#include "worker/model/model_config.h"
#include "worker/model/rank_shape.h"

namespace sy {

struct LayerWeights {
  std::vector<float> attn_norm;  // [hidden]
  WeightMatrix wqkv;             // [q_dim + 2 kv_dim, hidden]: q rows, then k, then v
  std::vector<float> bqkv;       // [q_dim + 2 kv_dim], empty without QKV bias
  std::vector<float> q_norm;     // [head_dim], empty without Q/K norm
  std::vector<float> k_norm;     // [head_dim]
  WeightMatrix wo;               // [hidden, q_dim]
  std::vector<float> ffn_norm;   // [hidden]
  WeightMatrix w_gate_up;        // [2 ffn, hidden]: gate rows, then up
  WeightMatrix w_down;           // [hidden, ffn]
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
  // [vocab, hidden], one slice in the file's type whatever it is (rows are converted on
  // lookup: embedding_row), float32 on the float32 path.
  WeightMatrix embedding;
  std::vector<float> output_norm;  // [hidden]
  // [vocab, hidden]; empty when tied to an embedding the kernels take. A tensor-parallel
  // rank's: its vocabulary rows [shape.vocab, hidden]; on the float32 path padded with
  // zero rows to [shape.vocab_stride, hidden].
  WeightMatrix lm_head;
  std::vector<LayerWeights> layers;

  const WeightMatrix& output_matrix() const { return lm_head.empty() ? embedding : lm_head; }
  // Row `token` of the embedding as float32 into out[hidden].
  void embedding_row(int32_t token, float* out) const;

  // Throws ModelFileError naming the tensor on a missing tensor or a shape mismatch.
  // `shape`: a tensor-parallel rank's slice (RankShape::of), read alone from the mapped
  // file; default: the whole model. Layer tensors then hold the rank's rows or columns
  // (wqkv [nq + 2 nkv, hidden], wo [hidden, nq], w_gate_up [2 ffn_r, hidden], w_down
  // [hidden, ffn_r]); the embedding and norms are whole. `float32`: every weight widened
  // to float32 rows the weights own (the reference path; 2-4x the memory).
  static ModelWeights load(const ModelSource& src, const ModelConfig& config, const RankShape& shape = {},
                           bool float32 = false);
};

}  // namespace sy
