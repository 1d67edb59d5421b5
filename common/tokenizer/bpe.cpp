#include "common/tokenizer/bpe.h"

#include <algorithm>
#include <bit>

#include "common/error.h"
#include "common/tokenizer/byte_level.h"

namespace sy::tok {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Min-heap order on (rank, left position): lowest rank first, leftmost on ties.
bool later(const BpeModel::Scratch::Candidate& a, const BpeModel::Scratch::Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

}  // namespace

BpeModel::BpeModel(const TokenTexts& tokens, const TokenizerSpec& spec)
    : ignore_merges_(spec.ignore_merges), unk_id_(spec.unk_id) {
  std::vector<bool> in_vocab(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) in_vocab[id] = spec.flags[id] & kInModelVocab;
  // The first of two equal entries wins, as it does in llama.cpp.
  index_.build(tokens, in_vocab);
  for (int b = 0; b < 256; ++b)
    byte_ids_[b] = index_.find(byte_level_char(static_cast<uint8_t>(b)));

  // A load factor between 0.35 and 0.7 keeps probe chains short and the table small.
  const size_t merge_count = spec.merge_parts.size() / 2;
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, merge_count * 10 / 7));
  slots_.assign(capacity, Slot{kEmpty, {0, 0}});
  slot_mask_ = capacity - 1;
  slot_shift_ = 64 - std::countr_zero(capacity);

  std::string joined;
  for (size_t rank = 0; rank < merge_count; ++rank) {
    const std::string_view a = spec.merge_parts[2 * rank];
    const std::string_view b = spec.merge_parts[2 * rank + 1];
    const int32_t ia = index_.find(a);
    const int32_t ib = index_.find(b);
    joined.assign(a).append(b);
    const int32_t iab = ia < 0 || ib < 0 ? -1 : index_.find(joined);
    if (iab < 0) {
      const std::string missing(ia < 0 ? a : ib < 0 ? b : std::string_view(joined));
      throw ModelFileError(spec.label + ": merge " + std::to_string(rank) + " ('" + std::string(a) +
                           "' '" + std::string(b) + "') names '" + missing +
                           "', which is not in the vocabulary");
    }
    if (insert_merge(ia, ib, Merge{static_cast<int32_t>(rank), iab})) ++merge_count_;
  }
}

bool BpeModel::insert_merge(int32_t left, int32_t right, Merge m) {
  const uint64_t key = pair_key(left, right);
  uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> slot_shift_;
  while (slots_[i].key != kEmpty) {
    if (slots_[i].key == key) return false;  // a repeated pair keeps its first (best) rank
    i = (i + 1) & slot_mask_;
  }
  slots_[i] = Slot{key, m};
  return true;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> slot_shift_;
  while (true) {
    const Slot& s = slots_[i];
    if (s.key == key) return &s.merge;
    if (s.key == kEmpty) return nullptr;
    i = (i + 1) & slot_mask_;
  }
}

std::optional<int32_t> BpeModel::find(std::string_view text) const {
  const int32_t id = index_.find(text);
  if (id < 0) return std::nullopt;
  return id;
}

void BpeModel::push_candidate(Scratch& s, int32_t left, int32_t right) const {
  if (left < 0 || right < 0) return;
  const int32_t left_id = s.symbols[left].id;
  const int32_t right_id = s.symbols[right].id;
  const Merge* m = find_merge(left_id, right_id);
  if (!m) return;
  s.heap.push_back({m->rank, left, right, left_id, right_id, m->merged_id});
  std::push_heap(s.heap.begin(), s.heap.end(), later);
}

void BpeModel::encode_piece(std::string_view bytes, Scratch& s, std::vector<int32_t>& out) const {
  if (bytes.empty()) return;
  if (ignore_merges_ && bytes.size() > 1) {
    s.text.clear();
    append_byte_level(bytes, s.text);
    if (const int32_t id = index_.find(s.text); id >= 0) {
      out.push_back(id);
      return;
    }
  }

  // One symbol per byte. A byte without a token becomes unk, or is dropped when the
  // model has no unk (what Hugging Face's BPE does).
  s.symbols.clear();
  s.heap.clear();
  for (char c : bytes) {
    int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id < 0) {
      if (!unk_id_) continue;
      id = *unk_id_;
    }
    const auto n = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({id, n - 1, -1});
    if (n > 0) s.symbols[n - 1].next = n;
  }
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(s.symbols.size()); ++i)
    push_candidate(s, i, i + 1);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), later);
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& left = s.symbols[c.left];
    Scratch::Symbol& right = s.symbols[c.right];
    // Skip candidates that an earlier merge made stale.
    if (left.id != c.left_id || left.next != c.right || right.id != c.right_id) continue;
    left.id = c.merged_id;
    left.next = right.next;
    if (right.next >= 0) s.symbols[right.next].prev = c.left;
    right.id = -1;
    right.prev = right.next = -1;
    push_candidate(s, left.prev, c.left);
    push_candidate(s, c.left, left.next);
  }

  for (int32_t i = s.symbols.empty() ? -1 : 0; i >= 0; i = s.symbols[i].next) {
    out.push_back(s.symbols[i].id);
  }
}

}  // namespace sy::tok
