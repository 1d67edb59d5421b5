// Streaming detokenization: text of each generated token as soon as it is complete.
// A byte-level token may end inside a UTF-8 character (an emoji is often 2-4 tokens);
// those trailing bytes are held back until the character completes, so every piece
// returned is valid UTF-8 and the pieces concatenate to Tokenizer::decode of all ids.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/tokenizer/tokenizer.h"

namespace sy {

class IncrementalDecoder {
 public:
  // `tokenizer` must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}

  // The text that `id` completes: "" while a character is still partial. Bytes that can
  // never become valid come out as U+FFFD right away.
  std::string push(int32_t id);
  std::string push(std::span<const int32_t> ids);

  // What is still held back, with an unfinished character as U+FFFD; the decoder is
  // then empty and can start a new stream.
  std::string finish();

  // True while bytes of an unfinished character are held back.
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::string drain();

  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;  // at most 3 bytes between calls: a partial UTF-8 character
};

}  // namespace sy
