// GGUF tokenizer metadata (tokenizer.ggml.*) → TokenizerSpec.
#include <string>

#include "common/error.h"
#include "common/tokenizer/loaders.h"
#include "common/tokenizer/patterns.h"

namespace sy::tok {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum GgufTokenType : int64_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

std::optional<int32_t> optional_id(const gguf::File& f, const std::string& key, size_t vocab_size) {
  if (!f.find(key)) return std::nullopt;
  const int64_t id = f.get_int(key);
  if (id < 0 || id >= static_cast<int64_t>(vocab_size)) {
    throw ModelFileError(f.label() + ": " + key + " = " + std::to_string(id) +
                         " is out of range (vocabulary of " + std::to_string(vocab_size) +
                         " tokens)");
  }
  return static_cast<int32_t>(id);
}

}  // namespace

TokenizerSpec spec_from_gguf(const gguf::File& f) {
  TokenizerSpec spec;
  spec.label = f.label();
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2") {
    throw ModelFileError(f.label() + ": tokenizer.ggml.model '" + model +
                         "' is not supported (only 'gpt2', byte-level BPE)");
  }

  // llama.cpp fixes each family's normalization, regex and merge rules by name.
  const std::string pre = f.get_string_or("tokenizer.ggml.pre", "(missing)");
  bool add_bos = false;
  if (pre == "qwen2") {
    spec.nfc = true;
    spec.pre_steps.push_back({PreStep::Kind::kSplit, kQwen2Pattern, false});
  } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    spec.pre_steps.push_back({PreStep::Kind::kSplit, kLlama3Pattern, false});
    spec.ignore_merges = true;
    add_bos = true;
  } else {
    throw ModelFileError(f.label() + ": tokenizer.ggml.pre '" + pre +
                         "' is not a supported pre-tokenizer (supported: qwen2, llama-bpe)");
  }

  const auto& tokens = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = tokens.size();
  if (n == 0) throw ModelFileError(f.label() + ": tokenizer.ggml.tokens is empty");
  std::vector<int64_t> all_normal;
  const std::vector<int64_t>* types = &all_normal;
  if (f.find("tokenizer.ggml.token_type")) {
    types = &f.get_int_array("tokenizer.ggml.token_type");
    if (types->size() != n) {
      throw ModelFileError(f.label() + ": tokenizer.ggml.token_type has " +
                           std::to_string(types->size()) +
                           " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    }
  } else {
    all_normal.assign(n, kNormal);
  }

  size_t token_bytes = 0;
  for (const auto& t : tokens) token_bytes += t.size();
  spec.tokens.reserve(n, token_bytes);
  for (const auto& t : tokens) spec.tokens.push_back(t);
  spec.flags.assign(n, 0);
  for (size_t id = 0; id < n; ++id) {
    const int64_t type = (*types)[id];
    uint8_t& flags = spec.flags[id];
    switch (type) {
      case kNormal:
      case kByte:
        flags = kInModelVocab;
        break;
      case kUnknown:
        flags = kSpecial | kDecodeRaw;
        if (!spec.unk_id) spec.unk_id = static_cast<int32_t>(id);
        break;
      case kControl:
      case kUserDefined: {
        // Both are recognized in text; only control tokens are special (llama.cpp
        // writes HF's special added tokens as control, the others as user-defined).
        flags = type == kControl ? kSpecial | kDecodeRaw : kDecodeRaw;
        AddedTokenSpec added;
        added.id = static_cast<int32_t>(id);
        added.content = tokens[id];
        spec.added.push_back(std::move(added));
        break;
      }
      case kUnused:
        flags = kDecodeNothing;
        break;
      default:
        throw ModelFileError(f.label() + ": tokenizer.ggml.token_type of token " +
                             std::to_string(id) + " is " + std::to_string(type) +
                             ", not a known type (1..6)");
    }
  }

  const auto& merges = f.get_string_array("tokenizer.ggml.merges");
  size_t merge_bytes = 0;
  for (const auto& m : merges) merge_bytes += m.size();
  spec.merge_parts.reserve(2 * merges.size(), merge_bytes);
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& m = merges[i];
    // Position 1 onward: the left part is never empty, even if it were a space.
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos) {
      throw ModelFileError(f.label() + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" + m +
                           "' is not two tokens separated by a space");
    }
    spec.merge_parts.push_back(std::string_view(m).substr(0, space));
    spec.merge_parts.push_back(std::string_view(m).substr(space + 1));
  }

  spec.bos_id = optional_id(f, "tokenizer.ggml.bos_token_id", n);
  spec.eos_id = optional_id(f, "tokenizer.ggml.eos_token_id", n);
  spec.pad_id = optional_id(f, "tokenizer.ggml.padding_token_id", n);
  if (spec.eos_id) spec.stop_ids.push_back(*spec.eos_id);
  if (auto eot = optional_id(f, "tokenizer.ggml.eot_token_id", n)) spec.stop_ids.push_back(*eot);
  if (auto eom = optional_id(f, "tokenizer.ggml.eom_token_id", n)) spec.stop_ids.push_back(*eom);

  if (f.get_bool_or("tokenizer.ggml.add_bos_token", add_bos)) {
    if (!spec.bos_id) {
      throw ModelFileError(f.label() +
                           ": tokenizer.ggml.add_bos_token is set but bos_token_id is missing");
    }
    spec.prefix_ids.push_back(*spec.bos_id);
  }
  if (f.get_bool_or("tokenizer.ggml.add_eos_token", false)) {
    if (!spec.eos_id) {
      throw ModelFileError(f.label() +
                           ": tokenizer.ggml.add_eos_token is set but eos_token_id is missing");
    }
    spec.suffix_ids.push_back(*spec.eos_id);
  }
  return spec;
}

}  // namespace sy::tok
