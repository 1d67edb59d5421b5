// The shape of a decoder-only model, read from GGUF metadata or a Hugging Face
// config.json. `llama`, `qwen2` and `qwen3` are one decoder configured by these fields.
#pragma once

#include <string>
#include <vector>

#include "common/model_source.h"
#include "kernels/cpu/rope.h"

namespace sy {

enum class Arch { kLlama, kQwen2, kQwen3 };

const char* arch_name(Arch a);

struct ModelConfig {
  Arch arch = Arch::kLlama;
  int n_layers = 0;
  int hidden = 0;
  int n_heads = 0;
  int n_kv_heads = 0;   // < n_heads: GQA; 1: MQA
  int head_dim = 0;     // may differ from hidden / n_heads (qwen3)
  int ffn = 0;          // intermediate size
  int vocab = 0;        // rows of the embedding matrix
  int max_context = 0;  // positions the model was trained for
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  int rope_dim = 0;                  // rotated dims per head (= head_dim unless partial)
  cpu::RopeLayout rope_layout = cpu::RopeLayout::kRotateHalf;
  std::vector<float> rope_freq_factors;  // Llama 3 rope scaling; empty = none
  bool rope_inv_freq_bf16 = false;       // emulate transformers on a bf16-loaded model (see rope.h)
  bool qkv_bias = false;   // qwen2
  bool qk_norm = false;    // qwen3
  bool tied_embeddings = false;

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  std::string describe() const;  // one line for logs

  // Reads the configuration; throws ModelFileError on missing or inconsistent fields.
  // Tensor presence (biases, norms, output) is read from the source's tensors.
  static ModelConfig from_source(const ModelSource& src);
};

// Llama 3 "rope_type: llama3" frequency factors (one per rotated pair).
std::vector<float> llama3_rope_factors(int rot_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, int original_max_positions);

}  // namespace sy
