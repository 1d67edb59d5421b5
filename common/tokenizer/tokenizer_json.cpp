#include "common/tokenizer/tokenizer_json.h"

#include <fstream>
#include <sstream>

#include "common/error.h"

namespace sy::tok {
namespace {

using json = nlohmann::json;

// Builds `rest` like nlohmann's DOM parser would, except inside model.vocab and
// model.merges, whose entries go straight to the flat vectors.
class Handler : public nlohmann::json_sax<json> {
 public:
  explicit Handler(TokenizerJson& out) : out_(out) {}

  const std::string& error() const { return error_; }

  bool null() override { return scalar(json(nullptr)); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::kVocab) return vocab_value(v);
    return scalar(json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::kVocab) {
      if (v > static_cast<number_unsigned_t>(INT64_MAX))
        return fail("model.vocab: id of '" + key_ + "' is too large");
      return vocab_value(static_cast<int64_t>(v));
    }
    return scalar(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return scalar(json(v)); }
  bool binary(binary_t&) override { return fail("unexpected binary value"); }

  bool string(string_t& v) override {
    switch (mode_) {
      case Mode::kMerges: {
        // "a b": the left part is never empty, so the split is at the first space after it.
        const size_t space = v.find(' ', 1);
        if (space == std::string::npos) {
          return fail("model.merges[" + std::to_string(merge_count()) + "] '" + v +
                      "' is not two tokens separated by a space");
        }
        out_.merge_parts.push_back(std::string_view(v).substr(0, space));
        out_.merge_parts.push_back(std::string_view(v).substr(space + 1));
        return true;
      }
      case Mode::kMergePair:
        if (pair_size_ == 0) {
          pair_.first = std::move(v);
        } else if (pair_size_ == 1) {
          pair_.second = std::move(v);
        }
        ++pair_size_;
        return true;
      case Mode::kVocab:
        return fail("model.vocab: id of '" + key_ + "' is not an integer");
      case Mode::kTree:
        return scalar(json(std::move(v)));
    }
    return true;
  }

  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::kTree) return fail(where() + " holds an unexpected object");
    if (stack_.size() == 2 && stack_[1] == model_ && key_ == "vocab") {
      mode_ = Mode::kVocab;
      out_.has_vocab = true;
      return true;
    }
    json* obj = add(json::object());
    if (stack_.size() == 1 && key_ == "model") model_ = obj;
    stack_.push_back(obj);
    return true;
  }

  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kTree;
      return true;
    }
    stack_.pop_back();
    return true;
  }

  bool start_array(std::size_t) override {
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_size_ = 0;
      return true;
    }
    if (mode_ != Mode::kTree) return fail(where() + " holds an unexpected array");
    if (stack_.size() == 2 && stack_[1] == model_ && key_ == "merges") {
      mode_ = Mode::kMerges;
      out_.has_merges = true;
      return true;
    }
    stack_.push_back(add(json::array()));
    return true;
  }

  bool end_array() override {
    if (mode_ == Mode::kMergePair) {
      if (pair_size_ != 2) {
        return fail("model.merges[" + std::to_string(merge_count()) + "] is not a pair of tokens");
      }
      out_.merge_parts.push_back(pair_.first);
      out_.merge_parts.push_back(pair_.second);
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kTree;
      return true;
    }
    stack_.pop_back();
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = std::string("invalid JSON: ") + e.what();
    return false;
  }

 private:
  enum class Mode { kTree, kVocab, kMerges, kMergePair };

  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  std::string where() const {
    return mode_ == Mode::kVocab ? "model.vocab"
                                 : "model.merges[" + std::to_string(merge_count()) + "]";
  }
  size_t merge_count() const { return out_.merge_parts.size() / 2; }

  bool vocab_value(int64_t v) {
    out_.vocab_texts.push_back(key_);
    out_.vocab_ids.push_back(v);
    return true;
  }

  bool scalar(json v) {
    if (mode_ == Mode::kMerges || mode_ == Mode::kMergePair) {
      return fail("model.merges[" + std::to_string(merge_count()) +
                  "] is not a string or a pair of strings");
    }
    if (mode_ == Mode::kVocab) return fail("model.vocab: id of '" + key_ + "' is not an integer");
    add(std::move(v));
    return true;
  }

  json* add(json v) {
    if (stack_.empty()) {
      out_.rest = std::move(v);
      return &out_.rest;
    }
    json& top = *stack_.back();
    if (top.is_object()) {
      json& slot = top[key_];
      slot = std::move(v);
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }

  TokenizerJson& out_;
  std::vector<json*> stack_;
  json* model_ = nullptr;
  std::string key_;
  Mode mode_ = Mode::kTree;
  std::pair<std::string, std::string> pair_;
  int pair_size_ = 0;
  std::string error_;
};

}  // namespace

TokenizerJson read_tokenizer_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelFileError(path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = std::move(buffer).str();

  TokenizerJson out;
  // Sized for the largest common vocabularies; they grow past that if need be.
  out.vocab_texts.reserve(160000, 1 << 21);
  out.vocab_ids.reserve(160000);
  out.merge_parts.reserve(600000, 1 << 22);
  Handler handler(out);
  if (!json::sax_parse(text, &handler) || !handler.error().empty()) {
    throw ModelFileError(path + ": " +
                         (handler.error().empty() ? "invalid JSON" : handler.error()));
  }
  if (!out.rest.is_object()) throw ModelFileError(path + ": not a JSON object");
  return out;
}

}  // namespace sy::tok
