// Byte-pair merging over one pre-tokenized piece. The piece starts as one symbol per
// byte; the adjacent pair with the best (lowest) merge rank is merged, leftmost first on
// ties, until no pair has a merge. Symbols live in a linked list over an array and
// candidate pairs in a min-heap, so a piece of n bytes costs O(n log n).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/tokenizer/token_index.h"
#include "common/tokenizer/tokenizer_spec.h"

namespace sy::tok {

class BpeModel {
 public:
  // Indexes the tokens flagged kInModelVocab and resolves the merges; throws
  // ModelFileError when a merge names a token the vocabulary lacks. `tokens` must
  // outlive the model: the index points into it.
  BpeModel(const TokenTexts& tokens, const TokenizerSpec& spec);

  // Reusable buffers for encode_piece, one per encode call (the model is shared).
  struct Scratch {
    struct Symbol {
      int32_t id;
      int32_t prev;
      int32_t next;
    };
    struct Candidate {
      int32_t rank;
      int32_t left;
      int32_t right;
      int32_t left_id;
      int32_t right_id;
      int32_t merged_id;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::string text;
  };

  // Appends the ids of raw piece `bytes` to `out`.
  void encode_piece(std::string_view bytes, Scratch& scratch, std::vector<int32_t>& out) const;

  // The model-vocabulary id of stored text `text` ("Ġthe").
  std::optional<int32_t> find(std::string_view text) const;

  size_t merge_count() const { return merge_count_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  // Open addressing over the (left id, right id) pair: the hottest lookup in encode.
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  bool insert_merge(int32_t left, int32_t right, Merge m);  // false: pair already there
  const Merge* find_merge(int32_t left, int32_t right) const;
  void push_candidate(Scratch& s, int32_t left, int32_t right) const;

  TokenIndex index_;
  std::array<int32_t, 256> byte_ids_{};  // the single-byte token of each byte, or -1
  std::vector<Slot> slots_;
  uint64_t slot_mask_ = 0;
  int slot_shift_ = 64;
  size_t merge_count_ = 0;
  bool ignore_merges_ = false;
  std::optional<int32_t> unk_id_;
};

}  // namespace sy::tok
