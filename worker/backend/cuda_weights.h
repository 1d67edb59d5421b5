// A model's weights in device memory for the cuda backend: linear layers in bf16, or
// kept in Q8_0, Q4_0, Q4_K, Q5_K or Q6_K when the file stores them so (a slice across
// columns only where it falls on the format's blocks); norms, biases and RoPE frequencies in
// fp32; the embedding table in bf16 for the row gather. Q/K/V and gate/up are fused
// into one weight each, as on the CPU. A tensor-parallel rank uploads only its slice
// (worker/model/rank_shape.h) read from the mapped file, the embedding and LM head by
// vocabulary rows.
#pragma once

#include <vector>

#include "common/model_source.h"
#include "kernels/cuda/device_buffer.cuh"
#include "kernels/cuda/linear.cuh"
#include "worker/model/model_config.h"
#include "worker/model/rank_shape.h"

namespace sy {

struct CudaLayerWeights {
  const float* attn_norm = nullptr;  // [hidden]
  cuda::LinearWeight wqkv;           // [q_dim + 2 kv_dim, hidden]
  const float* bqkv = nullptr;       // [q_dim + 2 kv_dim], null without QKV bias
  const float* q_norm = nullptr;     // [head_dim], null without Q/K norm
  const float* k_norm = nullptr;
  cuda::LinearWeight wo;            // [hidden, q_dim]
  const float* ffn_norm = nullptr;  // [hidden]
  cuda::LinearWeight w_gate_up;     // [2 ffn, hidden]
  cuda::LinearWeight w_down;        // [hidden, ffn]
};

struct CudaModelWeights {
  // [vocab, hidden]; a tensor-parallel rank: its vocabulary rows [shape.vocab, hidden].
  const __nv_bfloat16* embedding = nullptr;
  // [vocab, hidden]; the embedding when tied (its quantized form for a quantized file). A
  // tensor-parallel rank: its vocabulary rows then zero rows, [vocab_stride, hidden].
  cuda::LinearWeight lm_head;
  const float* output_norm = nullptr;    // [hidden]
  const float* rope_inv_freq = nullptr;  // [rope_dim / 2]
  std::vector<CudaLayerWeights> layers;
  size_t max_expand_elements = 0;  // the largest quantized weight, for cuda::Linear's scratch
  size_t device_bytes = 0;
  std::vector<cuda::DeviceBuffer> buffers;  // owns everything above

  // Reads every tensor from `src` (shapes checked as ModelWeights::load does) and
  // uploads `shape`'s slice of it (RankShape::of(config, {}) for the whole model) to the
  // current device. Throws ModelFileError for a bad model, std::runtime_error when the
  // device refuses an allocation or a copy.
  static CudaModelWeights upload(const ModelSource& src, const ModelConfig& config, const RankShape& shape);
};

}  // namespace sy
