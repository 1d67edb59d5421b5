// A tokenizer's vocabulary arranged for the mask walk, built once per tokenizer (about a
// second for 150K tokens) and then read-only, shared by every constrained request:
//  - a trie of the bytes every token decodes to (special tokens and stop ids left out:
//    they are never text; the stop ids end the turn, allowed separately);
//  - the tokens that are plain string text (valid, complete UTF-8 with no '"', '\' or
//    control byte), ordered by code points, so that inside a JSON string they are allowed
//    in one pass, and a trie of the rest;
//  - the tokens without '<' (free reasoning text that cannot begin "</think>"), and a trie
//    of the rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sy {
class Tokenizer;
}

namespace sy::constrain {

// Children of a node are a linked list (first_child / next_sibling, by byte); the token
// ids whose bytes end at node n are ids[ids_begin[n] .. ids_begin[n + 1]).
struct VocabTrie {
  std::vector<uint8_t> byte;
  std::vector<int32_t> first_child, next_sibling;
  std::vector<int32_t> ids_begin;  // size nodes + 1
  std::vector<int32_t> ids;
  size_t num_nodes() const { return byte.size(); }
};

class VocabIndex {
 public:
  explicit VocabIndex(const Tokenizer& tok);
  // From token bytes directly (tests: adversarial vocabularies). `special[i]`: never text.
  VocabIndex(const std::vector<std::string>& token_bytes, const std::vector<bool>& special, std::vector<int32_t> stop_ids);

  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;
  bool is_text(int32_t id) const { return text_[static_cast<size_t>(id)] != 0; }

  const VocabTrie& all() const { return all_; }
  const VocabTrie& string_rest() const { return string_rest_; }
  // Plain string tokens by code points ascending; string_plain_cps()[i] is string_plain()[i]'s.
  const std::vector<int32_t>& string_plain() const { return string_plain_; }
  const std::vector<int32_t>& string_plain_cps() const { return string_plain_cps_; }
  const VocabTrie& reasoning_rest() const { return reasoning_rest_; }
  const std::vector<int32_t>& reasoning_plain() const { return reasoning_plain_; }

 private:
  void build();

  std::vector<std::string> bytes_;
  std::vector<uint8_t> text_;  // 1: a non-special token with bytes
  std::vector<int32_t> stop_ids_;
  VocabTrie all_, string_rest_, reasoning_rest_;
  std::vector<int32_t> string_plain_, string_plain_cps_, reasoning_plain_;
};

// Code points of `s` when it is plain JSON string text (see above), else -1.
int32_t plain_string_code_points(const std::string& s);

}  // namespace sy::constrain
