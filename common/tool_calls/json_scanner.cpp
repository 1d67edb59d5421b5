#include "common/tool_calls/json_scanner.h"

#include <algorithm>

namespace sy {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

JsonScanner::Result JsonScanner::push(char c) {
  switch (state_) {
    case State::kFinished:
    case State::kFailed:
      return Result::kReject;
    case State::kValue:
    case State::kValueOrClose:
      if (is_json_space(c)) return Result::kMore;
      if (c == ']' && state_ == State::kValueOrClose) {
        stack_.pop_back();
        return end_value();
      }
      return value_start(c);
    case State::kKeyOrClose:
    case State::kKey:
      if (is_json_space(c)) return Result::kMore;
      if (c == '"') {
        state_ = State::kString;
        string_is_key_ = true;
        return Result::kMore;
      }
      if (c == '}' && state_ == State::kKeyOrClose) {
        stack_.pop_back();
        return end_value();
      }
      break;
    case State::kColon:
      if (is_json_space(c)) return Result::kMore;
      if (c == ':') {
        state_ = State::kValue;
        return Result::kMore;
      }
      break;
    case State::kAfterValue:
      if (is_json_space(c)) return Result::kMore;
      if (c == ',') {
        state_ = stack_.back() == '{' ? State::kKey : State::kValue;
        return Result::kMore;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
        stack_.pop_back();
        return end_value();
      }
      break;
    case State::kString:
      if (c == '"') {
        if (!string_is_key_) return end_value();
        state_ = State::kColon;
        return Result::kMore;
      }
      if (c == '\\') {
        state_ = State::kEscape;
        return Result::kMore;
      }
      if (static_cast<unsigned char>(c) < 0x20) break;  // control characters must be escaped
      return Result::kMore;
    case State::kEscape:
      if (c == 'u') {
        state_ = State::kUnicode;
        unicode_left_ = 4;
        return Result::kMore;
      }
      if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
          c == 't') {
        state_ = State::kString;
        return Result::kMore;
      }
      break;
    case State::kUnicode:
      if (!is_hex(c)) break;
      if (--unicode_left_ == 0) state_ = State::kString;
      return Result::kMore;
    case State::kLiteral:
      if (c != *literal_) break;
      if (*++literal_ == '\0') return end_value();
      return Result::kMore;
    case State::kNumber:
      return number_byte(c);
  }
  state_ = State::kFailed;
  return Result::kReject;
}

JsonScanner::Result JsonScanner::value_start(char c) {
  if (stack_.empty() && objects_only_ && c != '{') {
    state_ = State::kFailed;
    return Result::kReject;
  }
  started_ = true;
  switch (c) {
    case '{':
      stack_.push_back('{');
      state_ = State::kKeyOrClose;
      return Result::kMore;
    case '[':
      stack_.push_back('[');
      state_ = State::kValueOrClose;
      return Result::kMore;
    case '"':
      state_ = State::kString;
      string_is_key_ = false;
      return Result::kMore;
    case 't':
      literal_ = "rue";
      state_ = State::kLiteral;
      return Result::kMore;
    case 'f':
      literal_ = "alse";
      state_ = State::kLiteral;
      return Result::kMore;
    case 'n':
      literal_ = "ull";
      state_ = State::kLiteral;
      return Result::kMore;
    case '-':
      num_ = Num::kSign;
      state_ = State::kNumber;
      return Result::kMore;
    default:
      if (!is_digit(c)) break;
      num_ = c == '0' ? Num::kZero : Num::kInt;
      state_ = State::kNumber;
      return Result::kMore;
  }
  state_ = State::kFailed;
  return Result::kReject;
}

JsonScanner::Result JsonScanner::end_value() {
  if (stack_.empty()) {
    state_ = State::kFinished;
    return Result::kDone;
  }
  state_ = State::kAfterValue;
  return Result::kMore;
}

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; a number ends at the first byte that
// cannot continue it, which is then read as what follows the number.
JsonScanner::Result JsonScanner::number_byte(char c) {
  const bool digit = is_digit(c);
  switch (num_) {
    case Num::kSign:
      if (!digit) break;
      num_ = c == '0' ? Num::kZero : Num::kInt;
      return Result::kMore;
    case Num::kInt:
      if (digit) return Result::kMore;
      [[fallthrough]];
    case Num::kZero:
      if (c == '.') {
        num_ = Num::kDot;
        return Result::kMore;
      }
      if (c == 'e' || c == 'E') {
        num_ = Num::kExp;
        return Result::kMore;
      }
      if (stack_.empty()) break;  // a bare top-level number has no delimiter to end it
      state_ = State::kAfterValue;
      return push(c);
    case Num::kDot:
      if (!digit) break;
      num_ = Num::kFrac;
      return Result::kMore;
    case Num::kFrac:
      if (digit) return Result::kMore;
      if (c == 'e' || c == 'E') {
        num_ = Num::kExp;
        return Result::kMore;
      }
      if (stack_.empty()) break;
      state_ = State::kAfterValue;
      return push(c);
    case Num::kExp:
      if (c == '+' || c == '-') {
        num_ = Num::kExpSign;
        return Result::kMore;
      }
      [[fallthrough]];
    case Num::kExpSign:
      if (!digit) break;
      num_ = Num::kExpDigits;
      return Result::kMore;
    case Num::kExpDigits:
      if (digit) return Result::kMore;
      if (stack_.empty()) break;
      state_ = State::kAfterValue;
      return push(c);
  }
  state_ = State::kFailed;
  return Result::kReject;
}

int json_text_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace sy
