// What a tokenizer loader (GGUF metadata or tokenizer.json) hands to the Tokenizer: the
// vocabulary and rules in one neutral form. The Tokenizer validates it and builds its
// lookup structures from it; loaders only translate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/tokenizer/token_index.h"

namespace sy::tok {

enum TokenFlag : uint8_t {
  kInModelVocab = 1,   // a BPE vocabulary entry: merges and pieces may produce it
  kSpecial = 2,        // is_special(); dropped by decode(skip_special = true)
  kDecodeRaw = 4,      // decodes to its text as stored, not through the byte alphabet
  kDecodeNothing = 8,  // an unused slot (GGUF padding): decodes to nothing
};

// A token matched in the input text before pre-tokenization (special tokens such as
// <|im_start|>, and added tokens such as <think>).
struct AddedTokenSpec {
  int32_t id = 0;
  std::string content;
  bool lstrip = false;       // the match also swallows white space before it
  bool rstrip = false;       // ... and after it
  bool single_word = false;  // only matches when not inside a word
  bool normalized = false;   // matched in normalized text rather than the raw input
};

// One pre-tokenization step, applied to every piece the previous steps produced.
struct PreStep {
  enum class Kind { kSplit, kPrefixSpace };
  Kind kind = Kind::kSplit;
  std::string pattern;   // kSplit: regex (Oniguruma syntax as in tokenizer.json)
  bool literal = false;  // kSplit: `pattern` is a plain string, not a regex
};

struct TokenizerSpec {
  std::string label;           // the file, for error messages
  TokenTexts tokens;           // stored text by id ("Ġthe", "<|im_end|>"); "" for gaps
  std::vector<uint8_t> flags;  // TokenFlag bits by id
  // Merges by rank, best first: merge k joins merge_parts[2k] and merge_parts[2k + 1].
  TokenTexts merge_parts;
  bool ignore_merges = false;     // a piece that is itself a token is not merged
  std::optional<int32_t> unk_id;  // stands for bytes the vocabulary lacks

  bool nfc = false;  // normalize to NFC before pre-tokenization
  std::vector<PreStep> pre_steps;
  std::vector<AddedTokenSpec> added;

  std::vector<int32_t> prefix_ids;  // what encode(add_special = true) puts first
  std::vector<int32_t> suffix_ids;  // ... and last
  std::optional<int32_t> bos_id;
  std::optional<int32_t> eos_id;
  std::optional<int32_t> pad_id;
  std::vector<int32_t> stop_ids;  // end of generation, eos first
};

}  // namespace sy::tok
