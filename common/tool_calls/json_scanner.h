// A push scanner for one JSON value, fed a byte at a time: it says whether the bytes so far
// are a prefix of well-formed JSON (RFC 8259) and when the value is complete. The tool-call
// parser streams a call's arguments through it, so a fragment is shown to the client only
// once it is known to belong to the arguments, and `}` or `</tool_call>` inside a string
// stays in the string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sy {

// JSON's whitespace (RFC 8259: space, tab, line feed, carriage return).
inline bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class JsonScanner {
 public:
  enum class Result {
    kMore,    // the byte belongs to the value; it is not complete yet
    kDone,    // the byte completed the value
    kReject,  // the byte cannot follow what came before (the value is malformed)
  };

  // `objects_only`: the top-level value must be an object (tool-call arguments).
  explicit JsonScanner(bool objects_only = true) : objects_only_(objects_only) {}

  // Whitespace before the value is accepted (kMore) but is not part of it: started()
  // tells whether the value has begun. After kDone or kReject every byte is kReject.
  Result push(char c);
  bool started() const { return started_; }

 private:
  enum class State : uint8_t {
    kValue,        // a value must come (top level, after ':' or ',' in an array)
    kValueOrClose, // after '[': a value or ']'
    kKeyOrClose,   // after '{': a key or '}'
    kKey,          // after ',' in an object: a key
    kColon,        // after a key
    kAfterValue,   // ',' or the container's closing bracket
    kString,       // inside a string
    kEscape,       // after '\' in a string
    kUnicode,      // in \uXXXX
    kLiteral,      // inside true / false / null
    kNumber,       // inside a number
    kFinished,
    kFailed,
  };
  enum class Num : uint8_t { kSign, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };

  Result value_start(char c);
  Result end_value();  // a value (scalar or container) just ended
  Result number_byte(char c);

  bool objects_only_;
  bool started_ = false;
  State state_ = State::kValue;
  std::string stack_;       // '{' or '[' per open container
  bool string_is_key_ = false;
  int unicode_left_ = 0;
  const char* literal_ = nullptr;  // the rest of true/false/null still expected
  Num num_ = Num::kSign;
};

// The deepest nesting of arrays and objects in JSON text (brackets inside strings do not
// count), so that text from a client or a model can be refused before a parser recurses.
int json_text_depth(std::string_view text);

}  // namespace sy
