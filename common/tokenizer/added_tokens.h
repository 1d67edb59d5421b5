// Finds added tokens (special tokens such as <|im_end|>, and added ones such as <think>)
// in text before pre-tokenization, as Hugging Face does with split_special_tokens off:
// scanning left to right, the longest token starting at the leftmost position wins.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer_spec.h"

namespace sy::tok {

class AddedTokenMatcher {
 public:
  // Tokens with empty or ill-formed UTF-8 content are never matched.
  explicit AddedTokenMatcher(const std::vector<AddedTokenSpec>& tokens);

  bool empty() const { return tokens_.empty(); }

  // A stretch of `text`: plain text (id < 0) or one matched token.
  struct Segment {
    std::string_view text;
    int32_t id;
  };

  // Appends the segments of `text` (valid UTF-8) to `out`, in order. A token's
  // lstrip/rstrip white space goes with the token, not with the text beside it.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                       // index into tokens_
  };
  int32_t child(int32_t node, unsigned char byte) const;

  std::vector<AddedTokenSpec> tokens_;
  std::vector<Node> nodes_;  // nodes_[0] is the root
  bool first_byte_[256] = {};
};

}  // namespace sy::tok
