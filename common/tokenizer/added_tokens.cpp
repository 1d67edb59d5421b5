#include "common/tokenizer/added_tokens.h"

#include <algorithm>

#include <unicode/uchar.h>

#include "common/utf8.h"

namespace sy::tok {
namespace {

// Rust's char::is_whitespace, which Hugging Face's lstrip/rstrip use.
bool is_space(char32_t c) {
  return u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool is_word_char(char32_t c) {
  return c == U'_' || u_isalnum(static_cast<UChar32>(c));
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedTokenSpec>& tokens) {
  nodes_.emplace_back();
  for (const AddedTokenSpec& t : tokens) {
    if (t.content.empty() || !is_valid_utf8(t.content)) continue;
    int32_t node = 0;
    for (char ch : t.content) {
      const auto byte = static_cast<unsigned char>(ch);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[node].children;
        kids.insert(std::upper_bound(kids.begin(), kids.end(), std::make_pair(byte, int32_t{-1})),
                    {byte, next});
        nodes_.emplace_back();  // after the insert: `kids` refers into nodes_
      }
      node = next;
    }
    // Two added tokens with the same content: the first keeps it.
    if (nodes_[node].token >= 0) continue;
    nodes_[node].token = static_cast<int32_t>(tokens_.size());
    tokens_.push_back(t);
    first_byte_[static_cast<unsigned char>(t.content[0])] = true;
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  const auto& kids = nodes_[node].children;
  const auto it = std::lower_bound(kids.begin(), kids.end(), byte,
                                   [](const auto& kid, unsigned char b) { return kid.first < b; });
  return it != kids.end() && it->first == byte ? it->second : -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t text_start = 0;  // start of the plain text not yet emitted
  size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    // Longest token starting at i.
    int32_t best = -1;
    size_t best_end = i;
    for (int32_t node = 0, j = static_cast<int32_t>(i); j < static_cast<int32_t>(text.size());) {
      node = child(node, static_cast<unsigned char>(text[j++]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = j;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedTokenSpec& token = tokens_[best];
    size_t begin = i;
    size_t end = best_end;
    if (token.single_word) {
      const bool word_before = begin > 0 && is_word_char(prev_code_point(text, begin));
      size_t after = end;
      const bool word_after = end < text.size() && is_word_char(next_code_point(text, after));
      if (word_before || word_after) {
        i = end;  // the scan resumes after a discarded match, as Aho-Corasick's does
        continue;
      }
    }
    if (token.lstrip) {
      size_t start = begin;
      while (begin > text_start && is_space(prev_code_point(text, begin, &start))) begin = start;
    }
    if (token.rstrip) {
      size_t after = end;
      while (end < text.size() && is_space(next_code_point(text, after))) end = after;
    }
    if (begin > text_start) out.push_back({text.substr(text_start, begin - text_start), -1});
    out.push_back({text.substr(begin, end - begin), token.id});
    text_start = i = end;
  }
  if (text_start < text.size()) out.push_back({text.substr(text_start), -1});
}

}  // namespace sy::tok
