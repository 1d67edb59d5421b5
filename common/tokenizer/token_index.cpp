#include "common/tokenizer/token_index.h"

#include <xxhash.h>
#include <algorithm>
#include <bit>

namespace sy::tok {

void TokenTexts::reserve(size_t count, size_t bytes) {
  offsets_.reserve(count + 1);
  blob_.reserve(bytes);
}

void TokenTexts::push_back(std::string_view text) {
  blob_.append(text);
  offsets_.push_back(blob_.size());
}

uint64_t TokenIndex::hash_of(std::string_view text) {
  return XXH3_64bits(text.data(), text.size());
}

void TokenIndex::build(const TokenTexts& texts, const std::vector<bool>& include) {
  texts_ = &texts;
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, texts.size() * 2));
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  for (size_t id = 0; id < texts.size(); ++id) {
    if (!include[id]) continue;
    const std::string_view text = texts[id];
    const uint64_t h = hash_of(text);
    uint64_t i = h & mask_;
    bool present = false;
    while (slots_[i].id >= 0) {
      if (slots_[i].hash == static_cast<uint32_t>(h >> 32) && texts[slots_[i].id] == text) {
        present = true;
        break;
      }
      i = (i + 1) & mask_;
    }
    if (!present) slots_[i] = Slot{static_cast<uint32_t>(h >> 32), static_cast<int32_t>(id)};
  }
}

int32_t TokenIndex::find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_of(text);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == tag && (*texts_)[s.id] == text) return s.id;
  }
}

}  // namespace sy::tok
