#include "worker/model/model_config.h"

#include <cmath>
#include <numbers>

#include "common/error.h"

namespace sy {
namespace {

Arch parse_arch(const std::string& name, const std::string& where) {
  if (name == "llama") return Arch::kLlama;
  if (name == "qwen2") return Arch::kQwen2;
  if (name == "qwen3") return Arch::kQwen3;
  throw ModelFileError(where + ": architecture '" + name + "' is not supported (supported: llama, qwen2, qwen3)");
}

void validate(const ModelConfig& c, const std::string& where) {
  auto bad = [&](const std::string& what) { throw ModelFileError(where + ": " + what); };
  if (c.n_layers <= 0 || c.n_layers > 1024) bad("layer count " + std::to_string(c.n_layers) + " is out of range");
  if (c.hidden <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 || c.ffn <= 0)
    bad("hidden size, head counts, head_dim and intermediate size must be positive");
  if (c.n_heads % c.n_kv_heads != 0)
    bad(std::to_string(c.n_heads) + " query heads are not a multiple of " + std::to_string(c.n_kv_heads) + " KV heads");
  if (c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) bad("rotary dimension " + std::to_string(c.rope_dim) + " is invalid");
  if (!(c.rms_eps > 0) || !(c.rope_theta > 0)) bad("rms_norm_eps and rope theta must be positive");
  if (!c.rope_freq_factors.empty() && static_cast<int>(c.rope_freq_factors.size()) != c.rope_dim / 2)
    bad("rope frequency factors have " + std::to_string(c.rope_freq_factors.size()) + " entries, expected " + std::to_string(c.rope_dim / 2));
}

ModelConfig from_gguf(const ModelSource& src) {
  const gguf::File& f = *src.gguf();
  ModelConfig c;
  const std::string a = f.get_string("general.architecture");
  c.arch = parse_arch(a, src.path());
  c.n_layers = static_cast<int>(f.get_int(a + ".block_count"));
  c.hidden = static_cast<int>(f.get_int(a + ".embedding_length"));
  c.n_heads = static_cast<int>(f.get_int(a + ".attention.head_count"));
  c.n_kv_heads = static_cast<int>(f.get_int_or(a + ".attention.head_count_kv", c.n_heads));
  c.head_dim = static_cast<int>(f.get_int_or(a + ".attention.key_length", c.n_heads > 0 ? c.hidden / c.n_heads : 0));
  const int value_dim = static_cast<int>(f.get_int_or(a + ".attention.value_length", c.head_dim));
  if (value_dim != c.head_dim) throw ModelFileError(src.path() + ": key_length != value_length is not supported");
  c.ffn = static_cast<int>(f.get_int(a + ".feed_forward_length"));
  c.max_context = static_cast<int>(f.get_int_or(a + ".context_length", 4096));
  c.rms_eps = static_cast<float>(f.get_float(a + ".attention.layer_norm_rms_epsilon"));
  c.rope_theta = static_cast<float>(f.get_float_or(a + ".rope.freq_base", 10000.0));
  c.rope_dim = static_cast<int>(f.get_int_or(a + ".rope.dimension_count", c.head_dim));
  const std::string scaling = f.get_string_or(a + ".rope.scaling.type", "none");
  if (scaling != "none") throw ModelFileError(src.path() + ": rope scaling '" + scaling + "' is not supported");
  // GGUF's converter permutes llama Q/K rows into interleaved pairs; qwen* are left as is.
  c.rope_layout = c.arch == Arch::kLlama ? cpu::RopeLayout::kInterleaved : cpu::RopeLayout::kRotateHalf;
  const TensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb) throw ModelFileError(src.path() + ": missing tensor 'token_embd.weight'");
  if (emb->shape.size() != 2) throw ModelFileError(src.path() + ": token_embd.weight is not a matrix");
  c.vocab = static_cast<int>(emb->shape[0]);
  // Llama 3.1 GGUFs carry the scaled frequencies as a tensor.
  if (const TensorInfo* rf = f.find_tensor("rope_freqs.weight")) {
    if (rf->dtype != DType::kF32 || rf->numel() != c.rope_dim / 2)
      throw ModelFileError(src.path() + ": rope_freqs.weight must be F32 with rope_dim/2 entries");
    const auto* p = reinterpret_cast<const float*>(rf->data);
    c.rope_freq_factors.assign(p, p + rf->numel());
  }
  c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  return c;
}

template <typename T>
T json_get(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) throw ModelFileError(where + ": config.json has no '" + key + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ModelFileError(where + ": config.json '" + key + "' has the wrong type");
  }
}

template <typename T>
T json_get_or(const nlohmann::json& j, const char* key, T fallback, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return json_get<T>(j, key, where);
}

ModelConfig from_hf(const ModelSource& src) {
  const nlohmann::json& j = src.hf_config();
  const std::string where = src.path() + "/config.json";
  ModelConfig c;
  c.arch = parse_arch(json_get<std::string>(j, "model_type", where), where);
  c.n_layers = json_get<int>(j, "num_hidden_layers", where);
  c.hidden = json_get<int>(j, "hidden_size", where);
  c.n_heads = json_get<int>(j, "num_attention_heads", where);
  c.n_kv_heads = json_get_or<int>(j, "num_key_value_heads", c.n_heads, where);
  c.head_dim = json_get_or<int>(j, "head_dim", c.n_heads > 0 ? c.hidden / c.n_heads : 0, where);
  c.ffn = json_get<int>(j, "intermediate_size", where);
  c.vocab = json_get<int>(j, "vocab_size", where);
  c.max_context = json_get_or<int>(j, "max_position_embeddings", 4096, where);
  c.rms_eps = json_get_or<float>(j, "rms_norm_eps", 1e-6f, where);
  c.rope_dim = c.head_dim;
  c.rope_layout = cpu::RopeLayout::kRotateHalf;
  // transformers 5 moved rope_theta and rope_scaling into rope_parameters.
  nlohmann::json rope = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? j["rope_parameters"]
                        : j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"]
                                                                                       : nlohmann::json::object();
  c.rope_theta = json_get_or<float>(j, "rope_theta", json_get_or<float>(rope, "rope_theta", 10000.0f, where), where);
  const std::string rope_type = json_get_or<std::string>(rope, "rope_type", json_get_or<std::string>(rope, "type", "default", where), where);
  if (rope_type == "llama3") {
    c.rope_freq_factors = llama3_rope_factors(
        c.rope_dim, c.rope_theta, json_get<float>(rope, "factor", where), json_get<float>(rope, "low_freq_factor", where),
        json_get<float>(rope, "high_freq_factor", where), json_get<int>(rope, "original_max_position_embeddings", where));
  } else if (rope_type != "default") {
    throw ModelFileError(where + ": rope_type '" + rope_type + "' is not supported (supported: default, llama3)");
  }
  c.tied_embeddings = json_get_or<bool>(j, "tie_word_embeddings", false, where);
  c.qkv_bias = c.arch == Arch::kQwen2 || json_get_or<bool>(j, "attention_bias", false, where);
  c.qk_norm = c.arch == Arch::kQwen3;
  return c;
}

}  // namespace

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama: return "llama";
    case Arch::kQwen2: return "qwen2";
    case Arch::kQwen3: return "qwen3";
  }
  return "?";
}

std::string ModelConfig::describe() const {
  return std::string(arch_name(arch)) + ": " + std::to_string(n_layers) + " layers, hidden " + std::to_string(hidden) +
         ", heads " + std::to_string(n_heads) + "/" + std::to_string(n_kv_heads) + " kv, head_dim " +
         std::to_string(head_dim) + ", ffn " + std::to_string(ffn) + ", vocab " + std::to_string(vocab) +
         (qkv_bias ? ", qkv bias" : "") + (qk_norm ? ", q/k norm" : "") + (tied_embeddings ? ", tied" : "") +
         (rope_layout == cpu::RopeLayout::kInterleaved ? ", rope interleaved" : ", rope rotate-half");
}

ModelConfig ModelConfig::from_source(const ModelSource& src) {
  ModelConfig c = src.format() == ModelFormat::kGguf ? from_gguf(src) : from_hf(src);
  validate(c, src.path());
  return c;
}

std::vector<float> llama3_rope_factors(int rot_dim, float theta, float factor, float low_freq_factor,
                                       float high_freq_factor, int original_max_positions) {
  // Wavelengths longer than old_context/low_freq_factor are stretched by `factor`,
  // shorter than old_context/high_freq_factor kept, and the band between interpolated.
  std::vector<float> out(static_cast<size_t>(rot_dim / 2));
  const double low_wavelen = original_max_positions / static_cast<double>(low_freq_factor);
  const double high_wavelen = original_max_positions / static_cast<double>(high_freq_factor);
  for (int i = 0; i < rot_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(static_cast<double>(theta), 2.0 * i / rot_dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (original_max_positions / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1 - smooth) / factor + smooth);
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace sy
