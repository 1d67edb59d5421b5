// The tokens a simulated worker generates: ordinary words of the model's own vocabulary
// (entries that are a space and lower-case ASCII letters, such as " house"), so that the
// text decodes to readable words with the real tokenizer. Token i of a request is a pure
// function of (seed, i), as in the real sampler, so a stream resumed on another replica
// continues with the same tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace sy::sim {

class TokenSource {
 public:
  // Throws std::runtime_error when the vocabulary has no such words.
  explicit TokenSource(const Tokenizer& tokenizer);

  // The id of generated token `index` (0 = the first after the prompt, resume ids
  // counted) of a request drawn with `seed`.
  int32_t token(uint64_t seed, int64_t index) const;
  size_t size() const { return words_.size(); }

 private:
  std::vector<int32_t> words_;  // ascending ids
};

}  // namespace sy::sim
