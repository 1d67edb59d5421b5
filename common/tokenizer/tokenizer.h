// Byte-level BPE tokenizer (GPT-2 family: Qwen2/2.5/3, Llama 3), loaded from GGUF
// metadata or from a Hugging Face tokenizer.json, and matching Hugging Face's fast
// tokenizer token for token. encode() follows HF with split_special_tokens off: special
// and added tokens written in the text are recognized; the rest is NFC-normalized (when
// the model asks for it), split by the model's pre-tokenizer regex and merged by BPE.
//
// Text is UTF-8. Ill-formed UTF-8 given to encode() is first repaired the way Python's
// `bytes.decode("utf-8", "replace")` does (each maximal ill-formed subpart becomes
// U+FFFD), so its ids are those Hugging Face gives for the repaired string. decode()
// repairs ill-formed output the same way (HF's errors="replace").
//
// A Tokenizer is immutable after loading; encode() and decode() may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/gguf.h"
#include "common/model_source.h"
#include "common/tokenizer/token_index.h"

namespace sy {

namespace tok {
class AddedTokenMatcher;
class BpeModel;
class PreTokenizer;
struct EncodeScratch;
struct TokenizerSpec;
}  // namespace tok

class Tokenizer {
 public:
  // All loaders throw ModelFileError naming the file and the problem (unsupported
  // tokenizer kind or pre-tokenizer, missing keys, merges naming unknown tokens, ids out
  // of range, mismatched array lengths).
  //
  // GGUF file or Hugging Face directory (tokenizer.json + tokenizer_config.json; a
  // generation_config.json's eos_token_id joins stop_ids()).
  static std::unique_ptr<Tokenizer> from_model(const ModelSource& m);
  // tokenizer.ggml.* metadata; tokenizer.ggml.model must be "gpt2" and
  // tokenizer.ggml.pre one of "qwen2", "llama-bpe" (also spelled "llama3", "llama-v3").
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);
  // `tokenizer_config` may be null json; it supplies bos_token / eos_token / pad_token.
  static std::unique_ptr<Tokenizer> from_tokenizer_json(const std::string& tokenizer_json_path,
                                                        const nlohmann::json& tokenizer_config);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text`. With `add_special`, the model's own framing is added: BOS for
  // Llama 3 (GGUF add_bos_token / the HF post_processor's template), nothing for Qwen.
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;

  // Text of `ids`. Ids outside [0, vocab_size()) decode to nothing (a model's embedding
  // may be larger than its tokenizer). With `skip_special`, special tokens are dropped.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // Appends the raw bytes `id` stands for (possibly part of a UTF-8 character) to
  // `out`; nothing for an invalid id, or a special one when `skip_special`.
  void append_token_bytes(int32_t id, bool skip_special, std::string& out) const;

  // The vocabulary entry as stored ("Ġthe", "<|im_end|>"); "" for an invalid id.
  std::string token_text(int32_t id) const;
  // Number of token ids, added tokens included; valid ids are [0, vocab_size()).
  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }

  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  std::optional<int32_t> pad_id() const { return pad_id_; }
  // Ids that end generation: eos, then eot / eom and the model's other end-of-turn
  // tokens (<|eot_id|>, <|eom_id|>, <|im_end|>, <|endoftext|>, <|end_of_text|>, ...
  // where they are special tokens of this vocabulary), without repeats.
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;

  // True when encode(add_special = true) starts with BOS.
  bool add_bos() const;
  // Texts of BOS / EOS for chat templates; "" when the model has none.
  std::string bos_token() const;
  std::string eos_token() const;

  bool is_special(int32_t id) const;
  // The id of the token stored as `text`: a vocabulary entry ("Ġthe") or added token.
  std::optional<int32_t> find_token(std::string_view text) const;

 private:
  explicit Tokenizer(tok::TokenizerSpec spec);
  void encode_text(std::string_view text, std::vector<int32_t>& out, tok::EncodeScratch& s) const;

  std::string label_;
  tok::TokenTexts tokens_;               // stored text by id
  std::vector<uint8_t> flags_;           // tok::TokenFlag bits by id
  std::string bytes_;                    // what each token decodes to, concatenated
  std::vector<uint32_t> bytes_offsets_;  // token id's bytes are [offsets[id], offsets[id+1])
  std::unordered_map<std::string_view, int32_t> other_index_;  // tokens BPE cannot produce
  std::unique_ptr<tok::BpeModel> bpe_;
  std::unique_ptr<tok::PreTokenizer> pre_;
  std::unique_ptr<tok::AddedTokenMatcher> raw_added_;         // matched in the input text
  std::unique_ptr<tok::AddedTokenMatcher> normalized_added_;  // matched after normalization
  std::vector<int32_t> prefix_ids_;
  std::vector<int32_t> suffix_ids_;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  std::optional<int32_t> pad_id_;
  std::vector<int32_t> stop_ids_;
};

}  // namespace sy
