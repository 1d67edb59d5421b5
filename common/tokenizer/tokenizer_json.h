// Streaming reader for tokenizer.json. The vocabulary and merges are most of the file
// (150k entries and 150k-300k pairs); building them as a JSON tree costs several times
// the parse, so a SAX handler stores them in flat vectors and builds a tree only for the
// rest (normalizer, pre_tokenizer, added_tokens, ...).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/tokenizer/token_index.h"

namespace sy::tok {

struct TokenizerJson {
  nlohmann::json rest;  // the document, less model.vocab and model.merges
  bool has_vocab = false;
  bool has_merges = false;
  TokenTexts vocab_texts;          // model.vocab's keys, in file order
  std::vector<int64_t> vocab_ids;  // ... and their ids
  TokenTexts merge_parts;          // merge k joins parts 2k and 2k + 1
};

// Throws ModelFileError naming `path` on unreadable or malformed input, including a
// vocabulary value that is not an integer or a merge that is not two tokens.
TokenizerJson read_tokenizer_json(const std::string& path);

}  // namespace sy::tok
