// Normalization and pre-tokenization: NFC (when the model asks for it), then the regex
// splits that cut text into the pieces BPE merges within. Regexes run on ICU. The
// tokenizer.json patterns are written for Oniguruma, whose \s is Unicode White_Space
// while ICU's is narrower (no \v, no U+0085), so \s and \S are rewritten to the
// property before compiling.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unicode/normalizer2.h>
#include <unicode/regex.h>

#include "common/tokenizer/tokenizer_spec.h"

namespace sy::tok {

// Rewrites Oniguruma's \s / \S (also inside character classes) to ICU's
// \p{White_Space} / \P{White_Space}; other escapes pass through unchanged.
std::string onig_to_icu_pattern(std::string_view pattern);

class PreTokenizer {
 public:
  // Compiles the split patterns; throws ModelFileError naming a pattern ICU rejects.
  explicit PreTokenizer(const TokenizerSpec& spec);

  // Per-call state: matchers are not thread-safe, the compiled patterns are.
  struct Scratch {
    icu::UnicodeString input;  // aliases `utf16`; declared first so matchers die first
    std::vector<std::unique_ptr<icu::RegexMatcher>> matchers;
    std::u16string utf16;
    std::vector<uint32_t> utf8_offsets;  // UTF-8 offset of each UTF-16 unit, and the end
    std::vector<std::string_view> next;
    std::deque<std::string> owned;  // pieces that are not views into the input
  };

  bool normalizes() const { return nfc_ != nullptr; }

  // `text` in NFC when the model normalizes (a view of `storage` when that changed it),
  // else `text` itself.
  std::string_view normalize(std::string_view text, std::string& storage) const;

  // Replaces `pieces` with the pieces of `text`. They view `text` or `scratch.owned`.
  void split(std::string_view text, Scratch& scratch, std::vector<std::string_view>& pieces) const;

 private:
  void split_one(size_t step, std::string_view text, Scratch& s,
                 std::vector<std::string_view>& out) const;

  const icu::Normalizer2* nfc_ = nullptr;
  std::vector<PreStep::Kind> kinds_;
  std::vector<std::unique_ptr<icu::RegexPattern>> patterns_;  // by step; null for non-splits
};

}  // namespace sy::tok
