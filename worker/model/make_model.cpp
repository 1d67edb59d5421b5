#include "worker/model/make_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "common/gguf.h"
#include "common/gguf_writer.h"
#include "common/half.h"
#include "common/model_source.h"
#include "worker/model/convert.h"
#include "worker/model/quants.h"

namespace sy {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Token types as GGUF stores them.
constexpr int64_t kTokenNormal = 1, kTokenControl = 3, kTokenUserDefined = 4, kTokenUnused = 5;

std::string token_content(const nlohmann::json& t) {
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  return {};
}

// Tokenizer metadata copied from another GGUF, with the vocabulary padded to `vocab`.
void tokenizer_from_gguf(const std::string& path, int vocab, gguf::Writer& w) {
  auto f = gguf::File::open(path);
  for (const auto& kv : f->metadata())
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  const auto& tokens = f->get_string_array("tokenizer.ggml.tokens");
  if (static_cast<int>(tokens.size()) > vocab)
    throw std::invalid_argument(path + ": the tokenizer has " + std::to_string(tokens.size()) + " tokens, more than the preset's vocabulary of " + std::to_string(vocab));
  std::vector<std::string> padded = tokens;
  std::vector<int64_t> types = f->get_int_array("tokenizer.ggml.token_type");
  for (int id = static_cast<int>(padded.size()); id < vocab; ++id) {
    padded.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(kTokenUnused);
  }
  w.set_string_array("tokenizer.ggml.tokens", std::move(padded));
  w.set_i32_array("tokenizer.ggml.token_type", std::move(types));
}

// Tokenizer metadata converted from a Hugging Face tokenizer.json (and the
// tokenizer_config.json / chat_template.jinja beside it).
void tokenizer_from_json(const std::string& path, int vocab, gguf::Writer& w) {
  namespace fs = std::filesystem;
  const nlohmann::json tj = read_json_file(path);
  const fs::path dir = fs::path(path).parent_path();
  nlohmann::json cfg = nlohmann::json::object();
  if (fs::exists(dir / "tokenizer_config.json")) cfg = read_json_file((dir / "tokenizer_config.json").string());
  const auto& model = tj.at("model");
  if (model.value("type", "") != "BPE") throw std::invalid_argument(path + ": only BPE tokenizers can be converted");

  int max_id = -1;
  for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) max_id = std::max(max_id, it.value().get<int>());
  if (tj.contains("added_tokens"))
    for (const auto& t : tj["added_tokens"]) max_id = std::max(max_id, t.at("id").get<int>());
  if (max_id >= vocab)
    throw std::invalid_argument(path + ": token id " + std::to_string(max_id) + " does not fit the preset's vocabulary of " + std::to_string(vocab));
  std::vector<std::string> tokens(static_cast<size_t>(vocab));
  std::vector<int64_t> types(static_cast<size_t>(vocab), kTokenUnused);
  for (int id = 0; id < vocab; ++id) tokens[static_cast<size_t>(id)] = "[PAD" + std::to_string(id) + "]";
  for (auto it = model.at("vocab").begin(); it != model.at("vocab").end(); ++it) {
    const auto id = static_cast<size_t>(it.value().get<int>());
    tokens[id] = it.key();
    types[id] = kTokenNormal;
  }
  if (tj.contains("added_tokens"))
    for (const auto& t : tj["added_tokens"]) {
      const auto id = static_cast<size_t>(t.at("id").get<int>());
      tokens[id] = t.at("content").get<std::string>();
      types[id] = t.value("special", false) ? kTokenControl : kTokenUserDefined;
    }
  std::vector<std::string> merges;
  for (const auto& m : model.at("merges"))
    merges.push_back(m.is_string() ? m.get<std::string>() : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());

  // The pre-tokenizer is recognized by its digit rule: Llama 3 groups up to three digits.
  const std::string pre_json = tj.contains("pre_tokenizer") ? tj["pre_tokenizer"].dump() : "";
  std::string pre;
  if (pre_json.find("\\\\p{N}{1,3}") != std::string::npos) pre = "llama-bpe";
  else if (pre_json.find("\\\\p{N}|") != std::string::npos) pre = "qwen2";
  else throw std::invalid_argument(path + ": unrecognized pre-tokenizer (known: qwen2, llama-bpe)");

  auto id_of = [&](const std::string& text) -> int64_t {
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i] == text && types[i] != kTokenUnused) return static_cast<int64_t>(i);
    return -1;
  };
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  if (const std::string bos = token_content(cfg.value("bos_token", nlohmann::json())); !bos.empty() && id_of(bos) >= 0)
    w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(id_of(bos)));
  if (const std::string eos = token_content(cfg.value("eos_token", nlohmann::json())); !eos.empty() && id_of(eos) >= 0)
    w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(id_of(eos)));
  if (const std::string pad = token_content(cfg.value("pad_token", nlohmann::json())); !pad.empty() && id_of(pad) >= 0)
    w.set_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(id_of(pad)));
  // A post-processor that puts a special token before the text means "add BOS".
  const std::string post = tj.contains("post_processor") ? tj["post_processor"].dump() : "";
  const bool adds_bos = post.find("\"single\":[{\"SpecialToken\"") != std::string::npos;
  w.set_bool("tokenizer.ggml.add_bos_token", cfg.value("add_bos_token", adds_bos));
  std::string chat_template;
  if (cfg.contains("chat_template") && cfg["chat_template"].is_string()) chat_template = cfg["chat_template"].get<std::string>();
  if (fs::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
    chat_template.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!chat_template.empty()) w.set_string("tokenizer.chat_template", chat_template);
  w.set_string_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_i32_array("tokenizer.ggml.token_type", std::move(types));
  w.set_string_array("tokenizer.ggml.merges", std::move(merges));
}

// Row `vals` stored as `dt` into `out` (dtype_bytes(dt, row) bytes).
void store_row(DType dt, const std::vector<float>& vals, uint8_t* out) {
  const auto n = static_cast<int64_t>(vals.size());
  switch (dt) {
    case DType::kF32: std::memcpy(out, vals.data(), vals.size() * 4); return;
    case DType::kBF16:
      for (size_t i = 0; i < vals.size(); ++i) reinterpret_cast<uint16_t*>(out)[i] = f32_to_bf16(vals[i]);
      return;
    case DType::kF16:
      for (size_t i = 0; i < vals.size(); ++i) reinterpret_cast<uint16_t*>(out)[i] = f32_to_f16(vals[i]);
      return;
    case DType::kQ8_0: quantize_q8_0(vals.data(), reinterpret_cast<BlockQ8_0*>(out), n); return;
    case DType::kQ4_0: quantize_row_q4_0(vals.data(), reinterpret_cast<BlockQ4_0*>(out), n); return;
    case DType::kQ4_K: quantize_row_q4_k(vals.data(), reinterpret_cast<BlockQ4_K*>(out), n); return;
    case DType::kQ5_K: quantize_row_q5_k(vals.data(), reinterpret_cast<BlockQ5_K*>(out), n); return;
    case DType::kQ6_K: quantize_row_q6_k(vals.data(), reinterpret_cast<BlockQ6_K*>(out), n); return;
  }
}

}  // namespace

float synthetic_weight(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t a = splitmix64(seed * 0x632be59bd9b4e019ull ^ splitmix64(stream) ^ (index * 2));
  const uint64_t b = splitmix64(a ^ 0xd1b54a32d192ed03ull);
  const double u1 = (static_cast<double>(a >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = static_cast<double>(b >> 11) / 9007199254740992.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.141592653589793 * u2));
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = {
      // name, arch, layers, hidden, heads, kv heads, head_dim, ffn, vocab, context, theta, eps, tied, bias, qk norm
      {"qwen3-0.6b", Arch::kQwen3, 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f, true, false, true},
      {"qwen3-8b", Arch::kQwen3, 36, 4096, 32, 8, 128, 12288, 151936, 40960, 1e6f, 1e-6f, false, false, true},
      // Llama 3.1 8B's shape and 128K context (its rope scaling is not modelled: the
      // weights are random, the preset is for speed, not numerics).
      {"llama3-8b", Arch::kLlama, 32, 4096, 32, 8, 128, 14336, 128256, 131072, 5e5f, 1e-5f, false, false, false},
      {"qwen2-0.5b", Arch::kQwen2, 24, 896, 14, 2, 64, 4864, 151936, 32768, 1e6f, 1e-6f, true, true, false},
      {"tiny", Arch::kQwen3, 2, 64, 4, 2, 32, 128, 0, 4096, 1e6f, 1e-6f, true, false, false},
      // tiny with the 8B models' head_dim 128 (the Hopper prefill kernel's; no fixture
      // has it), for tests of the cuda backend against the cpu one.
      {"tiny128", Arch::kQwen3, 2, 256, 4, 2, 128, 512, 0, 4096, 1e6f, 1e-6f, true, false, false},
      // Not a real model's shape: big enough that prefill costs show, small enough that
      // four CPU workers share two cores (fleet benchmarks, bench/routing_compare.sh).
      {"small", Arch::kQwen3, 8, 512, 8, 4, 64, 1536, 0, 8192, 1e6f, 1e-6f, true, false, false},
  };
  return presets;
}

ModelPreset find_preset(const std::string& arch, const std::string& name) {
  Arch a;
  if (arch == "qwen3") a = Arch::kQwen3;
  else if (arch == "qwen2") a = Arch::kQwen2;
  else if (arch == "llama") a = Arch::kLlama;
  else throw std::invalid_argument("--arch must be qwen3, qwen2 or llama, not '" + arch + "'");
  std::string names;
  for (const auto& p : model_presets()) {
    names += (names.empty() ? "" : ", ") + p.name;
    if (p.name != name) continue;
    ModelPreset out = p;
    if (p.vocab == 0) {  // tiny, tiny128 and small take the architecture's features (and the tokenizer's vocabulary)
      out.arch = a;
      out.qkv_bias = a == Arch::kQwen2;
      out.qk_norm = a == Arch::kQwen3;
      out.rope_theta = a == Arch::kLlama ? 5e5f : 1e6f;
      return out;
    }
    if (p.arch != a) throw std::invalid_argument("preset " + name + " is a " + arch_name(p.arch) + " model, not " + arch);
    return out;
  }
  throw std::invalid_argument("unknown preset '" + name + "' (known: " + names + ")");
}

int64_t make_model(const MakeModelOptions& o) {
  ModelPreset p = find_preset(o.arch, o.preset);
  gguf::Writer w;
  // The tokenizer decides the vocabulary of the tiny, tiny128 and small presets.
  int vocab = p.vocab;
  const bool from_gguf = o.tokenizer_from.size() >= 5 && o.tokenizer_from.substr(o.tokenizer_from.size() - 5) == ".gguf";
  if (vocab == 0) {
    if (from_gguf) {
      vocab = static_cast<int>(gguf::File::open(o.tokenizer_from)->get_string_array("tokenizer.ggml.tokens").size());
    } else {
      const nlohmann::json tj = read_json_file(o.tokenizer_from);
      int max_id = static_cast<int>(tj.at("model").at("vocab").size()) - 1;
      for (const auto& t : tj.value("added_tokens", nlohmann::json::array())) max_id = std::max(max_id, t.at("id").get<int>());
      vocab = max_id + 1;
    }
  }
  const std::string a = arch_name(p.arch);
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", "switchyard synthetic " + p.name + " (random weights, seed " + std::to_string(o.seed) + ")");
  w.set_u32("general.file_type", gguf_file_type(o.type));
  w.set_u32("general.quantization_version", 2);
  w.set_u32(a + ".block_count", static_cast<uint32_t>(p.n_layers));
  w.set_u32(a + ".context_length", static_cast<uint32_t>(p.max_context));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(p.hidden));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(p.ffn));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(p.n_heads));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(p.n_kv_heads));
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(p.head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(p.head_dim));
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(p.head_dim));
  w.set_f32(a + ".rope.freq_base", p.rope_theta);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", p.rms_eps);
  w.set_u32(a + ".vocab_size", static_cast<uint32_t>(vocab));
  if (from_gguf)
    tokenizer_from_gguf(o.tokenizer_from, vocab, w);
  else
    tokenizer_from_json(o.tokenizer_from, vocab, w);

  int64_t params = 0;
  uint64_t stream = 0;
  // Matrices are N(0, 0.02²); norm weights 1 + N(0, 0.05²) so that a skipped norm shows.
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool is_norm) {
    const uint64_t s = ++stream;
    const int64_t row = shape.back();
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    params += n;
    const DType dt = is_norm ? DType::kF32 : tensor_type(o.type, name, shape, p.n_layers, p.tied);
    const uint64_t seed = o.seed;
    w.add_tensor(name, dt, std::move(shape), [=](int64_t r, uint8_t* out) {
      std::vector<float> vals(static_cast<size_t>(row));
      for (int64_t i = 0; i < row; ++i) {
        const float g = synthetic_weight(seed, s, static_cast<uint64_t>(r * row + i));
        vals[static_cast<size_t>(i)] = is_norm ? 1.0f + 0.05f * g : 0.02f * g;
      }
      store_row(dt, vals, out);
    });
  };
  const int64_t H = p.hidden, Q = int64_t{p.n_heads} * p.head_dim, KV = int64_t{p.n_kv_heads} * p.head_dim, F = p.ffn;
  add("token_embd.weight", {vocab, H}, false);
  add("output_norm.weight", {H}, true);
  if (!p.tied) add("output.weight", {vocab, H}, false);
  for (int l = 0; l < p.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", {H}, true);
    add(b + "attn_q.weight", {Q, H}, false);
    add(b + "attn_k.weight", {KV, H}, false);
    add(b + "attn_v.weight", {KV, H}, false);
    if (p.qkv_bias) {
      add(b + "attn_q.bias", {Q}, false);
      add(b + "attn_k.bias", {KV}, false);
      add(b + "attn_v.bias", {KV}, false);
    }
    if (p.qk_norm) {
      add(b + "attn_q_norm.weight", {p.head_dim}, true);
      add(b + "attn_k_norm.weight", {p.head_dim}, true);
    }
    add(b + "attn_output.weight", {H, Q}, false);
    add(b + "ffn_norm.weight", {H}, true);
    add(b + "ffn_gate.weight", {F, H}, false);
    add(b + "ffn_up.weight", {F, H}, false);
    add(b + "ffn_down.weight", {H, F}, false);
  }
  w.write(o.out);
  return params;
}

}  // namespace sy
