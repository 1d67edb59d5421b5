// Text → id lookup over token texts kept in one contiguous buffer. Loading resolves
// every merge by three lookups (left, right, joined: ~900k for Llama 3), so the table is
// open addressing with the hash beside the id: a probe touches one small array and
// compares text only when the hashes agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sy::tok {

// The texts of all token ids, end to end.
class TokenTexts {
 public:
  void reserve(size_t count, size_t bytes);
  void push_back(std::string_view text);
  size_t size() const { return offsets_.size() - 1; }
  std::string_view operator[](size_t id) const {
    return std::string_view(blob_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }

 private:
  std::string blob_;
  std::vector<uint64_t> offsets_{0};
};

class TokenIndex {
 public:
  // Indexes the ids for which `include[id]` is true; the first of equal texts wins.
  // `texts` must outlive the index.
  void build(const TokenTexts& texts, const std::vector<bool>& include);
  int32_t find(std::string_view text) const;  // -1 when absent

 private:
  struct Slot {
    uint32_t hash;
    int32_t id;  // -1: empty
  };
  static uint64_t hash_of(std::string_view text);

  const TokenTexts* texts_ = nullptr;
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace sy::tok
