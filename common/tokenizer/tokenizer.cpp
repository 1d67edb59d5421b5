#include "common/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/tokenizer/added_tokens.h"
#include "common/tokenizer/bpe.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/loaders.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/tokenizer_spec.h"
#include "common/utf8.h"

namespace sy {
namespace tok {

// Buffers of one encode() call; the Tokenizer itself is shared between threads.
struct EncodeScratch {
  std::vector<AddedTokenMatcher::Segment> segments;
  std::vector<AddedTokenMatcher::Segment> normalized_segments;
  std::string normalized;
  std::vector<std::string_view> pieces;
  PreTokenizer::Scratch pre;
  BpeModel::Scratch bpe;
};

}  // namespace tok

namespace {

// End-of-turn tokens that models emit without naming them as eos in their metadata
// (Llama 3's <|eot_id|> when eos is <|end_of_text|>, Qwen's <|endoftext|> beside
// <|im_end|>). Hugging Face lists them in generation_config.json; GGUF files often
// carry only one, so they are recognized by name, as llama.cpp does.
constexpr std::string_view kEndOfTurnTokens[] = {
    "<|eot_id|>",      "<|eom_id|>", "<|im_end|>",    "<|endoftext|>",
    "<|end_of_text|>", "<|end|>",    "<end_of_turn>", "<|return|>",
};

void check_id(const tok::TokenizerSpec& spec, int64_t id, const char* what) {
  if (id < 0 || id >= static_cast<int64_t>(spec.tokens.size())) {
    throw ModelFileError(spec.label + ": " + what + " id " + std::to_string(id) +
                         " is out of range (vocabulary of " + std::to_string(spec.tokens.size()) +
                         " tokens)");
  }
}

}  // namespace

Tokenizer::Tokenizer(tok::TokenizerSpec spec) : label_(spec.label) {
  if (spec.flags.size() != spec.tokens.size()) {
    throw ModelFileError(spec.label + ": token flags and tokens differ in length");
  }
  if (spec.tokens.size() == 0) throw ModelFileError(spec.label + ": the vocabulary is empty");
  if (spec.tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw ModelFileError(spec.label + ": the vocabulary is too large");
  }
  for (int32_t id : spec.prefix_ids) check_id(spec, id, "post-processor token");
  for (int32_t id : spec.suffix_ids) check_id(spec, id, "post-processor token");
  for (const auto& t : spec.added) check_id(spec, t.id, "added token");
  for (int32_t id : spec.stop_ids) check_id(spec, id, "end-of-generation token");
  if (spec.bos_id) check_id(spec, *spec.bos_id, "bos");
  if (spec.eos_id) check_id(spec, *spec.eos_id, "eos");
  if (spec.pad_id) check_id(spec, *spec.pad_id, "padding");
  if (spec.unk_id) check_id(spec, *spec.unk_id, "unk");

  tokens_ = std::move(spec.tokens);
  bpe_ = std::make_unique<tok::BpeModel>(tokens_, spec);  // reads spec.flags
  flags_ = std::move(spec.flags);
  pre_ = std::make_unique<tok::PreTokenizer>(spec);
  std::vector<tok::AddedTokenSpec> raw;
  std::vector<tok::AddedTokenSpec> normalized;
  for (auto& t : spec.added) (t.normalized ? normalized : raw).push_back(std::move(t));
  raw_added_ = std::make_unique<tok::AddedTokenMatcher>(raw);
  normalized_added_ = std::make_unique<tok::AddedTokenMatcher>(normalized);

  for (size_t id = 0; id < tokens_.size(); ++id) {
    if (!(flags_[id] & tok::kInModelVocab) && !tokens_[id].empty()) {
      other_index_.emplace(tokens_[id], static_cast<int32_t>(id));
    }
  }

  // What each id decodes to. Hugging Face's ByteLevel decoder maps a token through the
  // byte alphabet when every character is in it and keeps the text as it is otherwise.
  bytes_offsets_.reserve(tokens_.size() + 1);
  bytes_offsets_.push_back(0);
  for (size_t id = 0; id < tokens_.size(); ++id) {
    const uint8_t f = flags_[id];
    if (!(f & tok::kDecodeNothing) &&
        ((f & tok::kDecodeRaw) || !tok::decode_byte_level(tokens_[id], bytes_))) {
      bytes_.append(tokens_[id]);
    }
    if (bytes_.size() > std::numeric_limits<uint32_t>::max()) {
      throw ModelFileError(label_ + ": the vocabulary is too large");
    }
    bytes_offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  }

  prefix_ids_ = std::move(spec.prefix_ids);
  suffix_ids_ = std::move(spec.suffix_ids);
  bos_id_ = spec.bos_id;
  eos_id_ = spec.eos_id;
  pad_id_ = spec.pad_id;
  auto add_stop = [this](int32_t id) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end())
      stop_ids_.push_back(id);
  };
  if (eos_id_) add_stop(*eos_id_);
  for (int32_t id : spec.stop_ids) add_stop(id);
  for (std::string_view name : kEndOfTurnTokens) {
    const auto id = find_token(name);
    if (id && is_special(*id)) add_stop(*id);
  }
}

Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
  return std::unique_ptr<Tokenizer>(new Tokenizer(tok::spec_from_gguf(f)));
}

std::unique_ptr<Tokenizer> Tokenizer::from_tokenizer_json(const std::string& tokenizer_json_path,
                                                          const nlohmann::json& tokenizer_config) {
  return std::unique_ptr<Tokenizer>(
      new Tokenizer(tok::spec_from_tokenizer_json(tokenizer_json_path, tokenizer_config)));
}

std::unique_ptr<Tokenizer> Tokenizer::from_model(const ModelSource& m) {
  if (m.format() == ModelFormat::kGguf) return from_gguf(*m.gguf());
  if (m.hf_tokenizer_json_path().empty()) {
    throw ModelFileError(m.path() +
                         ": no tokenizer.json (only byte-level BPE tokenizer.json is supported)");
  }
  tok::TokenizerSpec spec =
      tok::spec_from_tokenizer_json(m.hf_tokenizer_json_path(), m.hf_tokenizer_config());
  const auto generation_config = std::filesystem::path(m.path()) / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(generation_config, ec)) {
    tok::add_generation_config_stops(read_json_file(generation_config.string()),
                                     generation_config.string(), spec);
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(spec)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + prefix_ids_.size() + suffix_ids_.size() + 4);
  if (add_special) out = prefix_ids_;
  std::string repaired;
  text = sy::valid_utf8_view(text, repaired);
  tok::EncodeScratch s;
  raw_added_->split(text, s.segments);
  for (const auto& segment : s.segments) {
    if (segment.id >= 0) {
      out.push_back(segment.id);
    } else {
      encode_text(segment.text, out, s);
    }
  }
  if (add_special) out.insert(out.end(), suffix_ids_.begin(), suffix_ids_.end());
  return out;
}

// Text between added tokens: normalize, match the added tokens that are matched in
// normalized text, pre-tokenize the rest and merge each piece.
void Tokenizer::encode_text(std::string_view text, std::vector<int32_t>& out,
                            tok::EncodeScratch& s) const {
  const std::string_view normalized = pre_->normalize(text, s.normalized);
  s.normalized_segments.clear();
  if (normalized_added_->empty()) {
    s.normalized_segments.push_back({normalized, -1});
  } else {
    normalized_added_->split(normalized, s.normalized_segments);
  }
  for (const auto& segment : s.normalized_segments) {
    if (segment.id >= 0) {
      out.push_back(segment.id);
      continue;
    }
    pre_->split(segment.text, s.pre, s.pieces);
    for (std::string_view piece : s.pieces) bpe_->encode_piece(piece, s.bpe, out);
    s.pre.owned.clear();
  }
}

void Tokenizer::append_token_bytes(int32_t id, bool skip_special, std::string& out) const {
  if (id < 0 || id >= vocab_size()) return;
  if (skip_special && (flags_[id] & tok::kSpecial)) return;
  out.append(bytes_, bytes_offsets_[id], bytes_offsets_[id + 1] - bytes_offsets_[id]);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) append_token_bytes(id, skip_special, bytes);
  if (sy::is_valid_utf8(bytes)) return bytes;
  std::string text;
  sy::append_utf8_lossy(bytes, text, /*final=*/true);
  return text;
}

std::string Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return std::string(tokens_[id]);
}

bool Tokenizer::is_stop(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

bool Tokenizer::add_bos() const {
  return bos_id_ && !prefix_ids_.empty() && prefix_ids_.front() == *bos_id_;
}

std::string Tokenizer::bos_token() const {
  return bos_id_ ? token_text(*bos_id_) : std::string();
}

std::string Tokenizer::eos_token() const {
  return eos_id_ ? token_text(*eos_id_) : std::string();
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && id < vocab_size() && (flags_[id] & tok::kSpecial);
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  if (auto id = bpe_->find(text)) return id;
  const auto it = other_index_.find(text);
  if (it == other_index_.end()) return std::nullopt;
  return it->second;
}

}  // namespace sy
