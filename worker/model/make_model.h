// Writes a GGUF model with deterministic random weights in the shape of a real model,
// carrying a real tokenizer and chat template: the default demo model and the models
// that benchmarks run, without downloading weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "worker/model/file_type.h"
#include "worker/model/model_config.h"

namespace sy {

struct ModelPreset {
  std::string name;
  Arch arch;
  int n_layers, hidden, n_heads, n_kv_heads, head_dim, ffn, vocab, max_context;
  float rope_theta, rms_eps;
  bool tied, qkv_bias, qk_norm;
};

// Presets by name: qwen3-0.6b, qwen3-8b, llama3-8b, qwen2-0.5b, `tiny` (any arch, a
// few layers of width 64, for tests), `tiny128` (the same with head_dim 128) and `small`.
const std::vector<ModelPreset>& model_presets();
// The preset `name` for `arch`; throws std::invalid_argument listing the choices.
ModelPreset find_preset(const std::string& arch, const std::string& name);

struct MakeModelOptions {
  std::string arch;
  std::string preset;
  std::string tokenizer_from;  // a GGUF file or a tokenizer.json (tokenizer_config.json beside it is read too)
  std::string out;
  // What the matrices are stored as (worker/model/file_type.h: one type, or Q4_K_M's
  // mixture); norms and biases are always F32.
  FileType type = FileType::kBF16;
  uint64_t seed = 1;
};

// Writes the model; returns the number of parameters. Throws on bad options or I/O.
int64_t make_model(const MakeModelOptions& options);

// Deterministic standard-normal-ish value for (seed, stream, index): a pure function,
// so the same model comes out on every machine.
float synthetic_weight(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace sy
