// A character-level pushdown automaton for JSON values of a compiled schema
// (json_schema.h): fed one byte at a time, it refuses the first byte after which no
// schema-valid value could follow. Its stack is a fixed array copied by value, so the
// mask walk (token_mask.h) can branch a state per vocabulary-trie node without
// allocating.
//
// The text it accepts is JSON as Python's json.dumps writes it, which is what chat models
// are trained on: no whitespace except one optional space after ':' and ','; keys in any
// order, each at most once, no others; strings valid UTF-8 with JSON's escapes (no lone
// surrogates); numbers of at most 15 integer, 15 fraction and 2 exponent digits (a model
// cannot run on forever in one number, and every number fits a double).
#pragma once

#include <array>
#include <cstdint>

#include "common/constrain/json_schema.h"

namespace sy::constrain {

struct JsonFrame {
  enum Kind : uint8_t { kValue, kObject, kArray, kString, kNumber, kLiterals };
  Kind kind = kValue;
  uint8_t phase = 0;
  uint8_t esc = 0;        // string: 0, 1 after '\', 2..5 inside \uXXXX (hex digits seen + 2)
  uint8_t need = 0;       // string: UTF-8 continuation bytes still to come
  uint8_t next_lo = 0x80;  // string: the range of the next continuation byte
  uint8_t next_hi = 0xBF;
  uint8_t digits = 0;     // number: digits of the current part
  uint8_t surrogate = 0;  // string: \u escape began with d/D
  int32_t node = 0;
  int32_t lo = 0, hi = 0, len = 0;  // object key / literal candidates [lo, hi) matched to len
  int64_t count = 0;                // string code points, array items
  uint64_t seen = 0;                // object: properties written
};

inline constexpr int kMaxJsonFrames = 2 * kMaxSchemaDepth + 4;

struct JsonStack {
  std::array<JsonFrame, kMaxJsonFrames> frames;
  int32_t depth = 0;

  void copy_from(const JsonStack& o) {
    depth = o.depth;
    for (int32_t i = 0; i < depth; ++i) frames[static_cast<size_t>(i)] = o.frames[static_cast<size_t>(i)];
  }
  void start(int32_t node) {
    depth = 1;
    frames[0] = JsonFrame{};
    frames[0].node = node;
  }
  bool empty() const { return depth == 0; }
  // Inside a string, between characters: any run of plain string characters fits.
  bool in_plain_string() const {
    if (depth == 0) return false;
    const JsonFrame& f = frames[static_cast<size_t>(depth - 1)];
    return f.kind == JsonFrame::kString && f.esc == 0 && f.need == 0;
  }
  // Code points the current string may still take (-1: no limit); in_plain_string() only.
  int64_t string_room(const SchemaGraph& g) const;
};

// Feeds one byte; false when no schema-valid value continues with it (the stack is then
// unspecified). The value is complete when the stack becomes empty.
bool json_feed(const SchemaGraph& g, JsonStack& s, uint8_t c);

}  // namespace sy::constrain
