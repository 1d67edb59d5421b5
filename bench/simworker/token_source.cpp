#include "bench/simworker/token_source.h"

#include <stdexcept>
#include <string>

namespace sy::sim {
namespace {

// "Ġ" (U+0120) is how byte-level BPE vocabularies store a leading space.
constexpr std::string_view kSpaceMark = "\xC4\xA0";
constexpr size_t kMinLetters = 2;

bool is_word(const std::string& entry) {
  if (entry.size() < kSpaceMark.size() + kMinLetters || entry.compare(0, kSpaceMark.size(), kSpaceMark) != 0)
    return false;
  for (size_t i = kSpaceMark.size(); i < entry.size(); ++i)
    if (entry[i] < 'a' || entry[i] > 'z') return false;
  return true;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

TokenSource::TokenSource(const Tokenizer& tokenizer) {
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    if (!tokenizer.is_special(id) && !tokenizer.is_stop(id) && is_word(tokenizer.token_text(id)))
      words_.push_back(id);
  if (words_.empty())
    throw std::runtime_error("the tokenizer has no ordinary words (\"Ġ\" + a-z) to generate");
}

int32_t TokenSource::token(uint64_t seed, int64_t index) const {
  const uint64_t draw = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(index)));
  return words_[draw % words_.size()];
}

}  // namespace sy::sim
