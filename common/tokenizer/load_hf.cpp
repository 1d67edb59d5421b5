// Hugging Face tokenizer.json (+ tokenizer_config.json) → TokenizerSpec. Only what
// byte-level BPE models use is accepted; anything else is refused by name rather than
// tokenized differently from Hugging Face.
#include <algorithm>

#include "common/error.h"
#include "common/tokenizer/loaders.h"
#include "common/tokenizer/patterns.h"
#include "common/tokenizer/tokenizer_json.h"

namespace sy::tok {
namespace {

using json = nlohmann::json;

class Reader {
 public:
  Reader(std::string label, TokenizerSpec& spec) : label_(std::move(label)), spec_(spec) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ModelFileError(label_ + ": " + what);
  }

  std::string type_of(const json& j, const std::string& where) const {
    if (!j.is_object()) fail(where + " is not an object");
    const auto it = j.find("type");
    if (it == j.end() || !it->is_string()) fail(where + " has no type");
    return it->get<std::string>();
  }

  bool bool_or(const json& j, const char* key, bool fallback, const std::string& where) const {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(where + "." + key + " is not a boolean");
    return it->get<bool>();
  }

  void model(const json& m, TokenizerJson& file) {
    if (!m.is_object()) fail("model is missing or not an object");
    const auto type = m.find("type");
    if (type != m.end() && !(type->is_string() && *type == "BPE")) {
      fail("model type " + type->dump() + " is not supported (only BPE)");
    }
    if (!file.has_vocab) fail("model.vocab is missing or not an object");
    if (!file.has_merges) fail("model.merges is missing or not an array");
    if (const auto d = m.find("dropout");
        d != m.end() && !d->is_null() && !(d->is_number() && *d == 0)) {
      fail("model.dropout is not supported");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      const auto it = m.find(key);
      if (it != m.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
        fail(std::string("model.") + key + " " + it->dump() + " is not supported");
      }
    }
    if (bool_or(m, "byte_fallback", false, "model")) fail("model.byte_fallback is not supported");
    spec_.ignore_merges = bool_or(m, "ignore_merges", false, "model");
    spec_.merge_parts = std::move(file.merge_parts);
  }

  void normalizer(const json& n) {
    if (n.is_null()) return;
    const std::string type = type_of(n, "normalizer");
    if (type == "NFC") {
      spec_.nfc = true;
    } else if (type == "Sequence") {
      const auto list = n.find("normalizers");
      if (list == n.end() || !list->is_array()) fail("normalizer Sequence has no normalizers list");
      for (const json& item : *list) normalizer(item);
    } else {
      fail("normalizer '" + type + "' is not supported (supported: NFC, Sequence)");
    }
  }

  void pre_tokenizer(const json& p) {
    if (p.is_null()) fail("pre_tokenizer is null; a byte-level BPE needs ByteLevel");
    const std::string type = type_of(p, "pre_tokenizer");
    if (type == "Sequence") {
      const auto list = p.find("pretokenizers");
      if (list == p.end() || !list->is_array())
        fail("pre_tokenizer Sequence has no pretokenizers list");
      for (const json& item : *list) pre_tokenizer_step(item);
    } else {
      pre_tokenizer_step(p);
    }
    if (!saw_byte_level_)
      fail("pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
  }

  void pre_tokenizer_step(const json& p) {
    const std::string type = type_of(p, "pre_tokenizer");
    if (saw_byte_level_) fail("pre_tokenizer step '" + type + "' after ByteLevel is not supported");
    if (type == "Split") {
      const auto behavior = p.find("behavior");
      if (behavior == p.end() || *behavior != "Isolated") {
        fail("pre_tokenizer Split behavior " +
             (behavior == p.end() ? std::string("(missing)") : behavior->dump()) +
             " is not supported (only Isolated)");
      }
      if (bool_or(p, "invert", false, "pre_tokenizer Split"))
        fail("pre_tokenizer Split with invert is not supported");
      const auto pattern = p.find("pattern");
      if (pattern == p.end() || !pattern->is_object()) fail("pre_tokenizer Split has no pattern");
      if (const auto re = pattern->find("Regex"); re != pattern->end() && re->is_string()) {
        spec_.pre_steps.push_back({PreStep::Kind::kSplit, re->get<std::string>(), false});
      } else if (const auto str = pattern->find("String");
                 str != pattern->end() && str->is_string()) {
        spec_.pre_steps.push_back({PreStep::Kind::kSplit, str->get<std::string>(), true});
      } else {
        fail("pre_tokenizer Split pattern is neither Regex nor String");
      }
    } else if (type == "ByteLevel") {
      saw_byte_level_ = true;
      // Hugging Face's defaults for a ByteLevel written without these fields.
      if (bool_or(p, "add_prefix_space", true, "pre_tokenizer ByteLevel")) {
        spec_.pre_steps.push_back({PreStep::Kind::kPrefixSpace, "", false});
      }
      if (bool_or(p, "use_regex", true, "pre_tokenizer ByteLevel")) {
        spec_.pre_steps.push_back({PreStep::Kind::kSplit, kGpt2Pattern, false});
      }
    } else {
      fail("pre_tokenizer '" + type + "' is not supported (supported: Split, ByteLevel, Sequence)");
    }
  }

  void decoder(const json& d) {
    if (d.is_null()) fail("decoder is null; only the ByteLevel decoder is supported");
    const std::string type = type_of(d, "decoder");
    if (type == "Sequence") {
      const auto list = d.find("decoders");
      if (list == d.end() || !list->is_array() || list->empty())
        fail("decoder Sequence has no decoders list");
      for (const json& item : *list) decoder(item);
    } else if (type != "ByteLevel") {
      fail("decoder '" + type + "' is not supported (only ByteLevel)");
    }
  }

  void post_processor(const json& p) {
    if (p.is_null()) return;
    const std::string type = type_of(p, "post_processor");
    if (type == "ByteLevel") return;  // only adjusts offsets
    if (type == "Sequence") {
      const auto list = p.find("processors");
      if (list == p.end() || !list->is_array())
        fail("post_processor Sequence has no processors list");
      for (const json& item : *list) post_processor(item);
      return;
    }
    if (type != "TemplateProcessing") {
      fail("post_processor '" + type +
           "' is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
    }
    // `single` frames one sequence: the special tokens before $A are what encoding with
    // special tokens prepends (Llama 3's BOS), those after it what it appends.
    const auto single = p.find("single");
    const auto specials = p.find("special_tokens");
    if (single == p.end() || !single->is_array())
      fail("post_processor TemplateProcessing has no single template");
    bool saw_sequence = false;
    for (const json& piece : *single) {
      if (piece.is_object() && piece.contains("Sequence")) {
        saw_sequence = true;
        continue;
      }
      const json* special =
          piece.is_object() && piece.contains("SpecialToken") ? &piece["SpecialToken"] : nullptr;
      if (!special || !special->is_object() || !special->contains("id") ||
          !(*special)["id"].is_string()) {
        fail("post_processor template piece " + piece.dump() +
             " is neither Sequence nor SpecialToken");
      }
      const std::string name = (*special)["id"].get<std::string>();
      if (specials == p.end() || !specials->is_object() || !specials->contains(name)) {
        fail("post_processor special token '" + name + "' is not in special_tokens");
      }
      const json& ids = (*specials)[name]["ids"];
      if (!ids.is_array()) fail("post_processor special token '" + name + "' has no ids");
      for (const json& id : ids) {
        if (!id.is_number_integer())
          fail("post_processor special token '" + name + "' has a non-integer id");
        (saw_sequence ? spec_.suffix_ids : spec_.prefix_ids)
            .push_back(checked_id(id.get<int64_t>(), name));
      }
    }
    if (!saw_sequence) fail("post_processor single template has no Sequence");
  }

  int32_t checked_id(int64_t id, const std::string& what) const {
    if (id < 0 || id >= static_cast<int64_t>(spec_.tokens.size())) {
      fail("id " + std::to_string(id) + " of '" + what + "' is out of range (vocabulary of " +
           std::to_string(spec_.tokens.size()) + " tokens)");
    }
    return static_cast<int32_t>(id);
  }

  // Model vocabulary and added tokens share one id space.
  void vocabulary(const TokenizerJson& file, const json& added_tokens) {
    if (!added_tokens.is_null() && !added_tokens.is_array()) fail("added_tokens is not an array");
    const size_t added_count = added_tokens.is_array() ? added_tokens.size() : 0;
    // Ids are dense in practice; bounding them by the number of entries keeps a bad id
    // from allocating gigabytes.
    const size_t limit = file.vocab_ids.size() + added_count;
    std::vector<std::string_view> text(limit);  // views into `file`
    spec_.flags.assign(limit, kDecodeNothing);
    size_t size = 0;
    auto claim = [&](int64_t id, std::string_view what) {
      if (id < 0 || static_cast<size_t>(id) >= limit) {
        fail("token '" + std::string(what) + "' has id " + std::to_string(id) + ", out of range (" +
             std::to_string(limit) + " tokens in the file)");
      }
      size = std::max(size, static_cast<size_t>(id) + 1);
    };
    for (size_t i = 0; i < file.vocab_ids.size(); ++i) {
      const int64_t id = file.vocab_ids[i];
      const std::string_view t = file.vocab_texts[i];
      claim(id, t);
      if (spec_.flags[id] != kDecodeNothing) {
        fail("model.vocab gives id " + std::to_string(id) + " to both '" + std::string(text[id]) +
             "' and '" + std::string(t) + "'");
      }
      text[id] = t;
      spec_.flags[id] = kInModelVocab;
    }
    // Both branches are lvalues: `text` keeps views into the contents, so the list must
    // not be a temporary copy.
    static const json kNoTokens = json::array();
    for (const json& t : added_tokens.is_array() ? added_tokens : kNoTokens) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
          !t.contains("content") || !t["content"].is_string()) {
        fail("added token " + t.dump() + " needs an integer id and a string content");
      }
      const std::string& content = t["content"].get_ref<const std::string&>();
      const int64_t id = t["id"].get<int64_t>();
      claim(id, content);
      AddedTokenSpec a;
      a.id = static_cast<int32_t>(id);
      a.content = content;
      const bool special = bool_or(t, "special", false, "added token");
      a.lstrip = bool_or(t, "lstrip", false, "added token");
      a.rstrip = bool_or(t, "rstrip", false, "added token");
      a.single_word = bool_or(t, "single_word", false, "added token");
      a.normalized = bool_or(t, "normalized", !special, "added token");
      uint8_t& flags = spec_.flags[id];
      if (flags & kInModelVocab) {
        if (text[id] != content) {
          fail("added token '" + content + "' has id " + std::to_string(id) +
               ", which the vocabulary gives to '" + std::string(text[id]) + "'");
        }
      } else {
        text[id] = content;
        flags = 0;
      }
      if (special) flags |= kSpecial;
      spec_.added.push_back(std::move(a));
    }
    if (size == 0) fail("the vocabulary is empty");
    spec_.flags.resize(size);
    size_t bytes = 0;
    for (size_t id = 0; id < size; ++id) bytes += text[id].size();
    spec_.tokens.reserve(size, bytes);
    for (size_t id = 0; id < size; ++id) spec_.tokens.push_back(text[id]);
  }

  // A few lookups per file: a scan costs less than indexing 150k strings.
  std::optional<int32_t> find(const std::string& text) const {
    for (const AddedTokenSpec& a : spec_.added) {
      if (a.content == text) return a.id;
    }
    for (size_t id = 0; id < spec_.tokens.size(); ++id) {
      if ((spec_.flags[id] & kInModelVocab) && spec_.tokens[id] == text)
        return static_cast<int32_t>(id);
    }
    return std::nullopt;
  }

  // tokenizer_config.json names bos/eos/pad/unk by text: a string or {"content": ...}.
  std::optional<int32_t> config_token(const json& config, const char* key,
                                      const std::string& config_label) const {
    if (!config.is_object()) return std::nullopt;
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) return std::nullopt;
    const json* content = &*it;
    if (it->is_object()) {
      const auto c = it->find("content");
      if (c == it->end()) throw ModelFileError(config_label + ": " + key + " has no content");
      content = &*c;
    }
    if (!content->is_string()) throw ModelFileError(config_label + ": " + key + " is not a string");
    const auto id = find(content->get<std::string>());
    if (!id) {
      throw ModelFileError(config_label + ": " + key + " '" + content->get<std::string>() +
                           "' is not a token of " + label_);
    }
    return id;
  }

  void unk(const json& model) {
    const auto it = model.find("unk_token");
    if (it == model.end() || it->is_null()) return;
    if (!it->is_string()) fail("model.unk_token is not a string");
    spec_.unk_id = find(it->get<std::string>());
    if (!spec_.unk_id)
      fail("model.unk_token '" + it->get<std::string>() + "' is not in the vocabulary");
  }

 private:
  std::string label_;
  TokenizerSpec& spec_;
  bool saw_byte_level_ = false;
};

const json& member(const json& j, const char* key) {
  static const json null_json;
  const auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

}  // namespace

TokenizerSpec spec_from_tokenizer_json(const std::string& path, const json& config) {
  TokenizerJson file = read_tokenizer_json(path);
  TokenizerSpec spec;
  spec.label = path;
  Reader r(path, spec);
  const json& model = member(file.rest, "model");
  r.model(model, file);
  r.vocabulary(file, member(file.rest, "added_tokens"));
  r.unk(model);
  r.normalizer(member(file.rest, "normalizer"));
  r.pre_tokenizer(member(file.rest, "pre_tokenizer"));
  r.post_processor(member(file.rest, "post_processor"));
  r.decoder(member(file.rest, "decoder"));

  const std::string config_label = "tokenizer_config.json beside " + path;
  spec.bos_id = r.config_token(config, "bos_token", config_label);
  spec.eos_id = r.config_token(config, "eos_token", config_label);
  spec.pad_id = r.config_token(config, "pad_token", config_label);
  if (spec.eos_id) spec.stop_ids.push_back(*spec.eos_id);
  return spec;
}

void add_generation_config_stops(const json& generation_config, const std::string& label,
                                 TokenizerSpec& spec) {
  if (!generation_config.is_object()) return;
  const json& eos = member(generation_config, "eos_token_id");
  const json list = eos.is_array() ? eos : eos.is_null() ? json::array() : json::array({eos});
  for (const json& id : list) {
    if (!id.is_number_integer()) throw ModelFileError(label + ": eos_token_id holds a non-integer");
    const int64_t v = id.get<int64_t>();
    if (v < 0 || v >= static_cast<int64_t>(spec.tokens.size())) {
      throw ModelFileError(label + ": eos_token_id " + std::to_string(v) +
                           " is out of range (vocabulary of " + std::to_string(spec.tokens.size()) +
                           " tokens)");
    }
    spec.stop_ids.push_back(static_cast<int32_t>(v));
  }
}

}  // namespace sy::tok
