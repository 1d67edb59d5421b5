#include "common/jinja/lexer.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/jinja/error.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

constexpr size_t kNpos = std::string::npos;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// Jinja reads the whole source with \r\n and \r turned into \n, and without one trailing
// newline unless keep_trailing_newline is set.
std::string normalize_newlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& options)
      : src_(normalize_newlines(source, options.keep_trailing_newline)), o_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      if (tag == kNpos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                      ? src_[tag + 2]
                      : 0;
      size_t raw_end = kind == '%' ? match_raw_begin(tag, sign) : kNpos;
      std::string text = src_.substr(pos_, tag - pos_);
      emit_text(strip_before_tag(std::move(text), sign, kind == '{'), pos_);
      if (raw_end != kNpos) {
        lex_raw(raw_end);
      } else if (kind == '#') {
        lex_comment(tag, sign);
      } else {
        lex_tag(tag, kind, sign);
      }
    }
    out_.push_back(make(TokenType::kEnd, src_.size()));
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& message) const {
    int line, column;
    position(at, &line, &column);
    throw TemplateError(message, TemplateError::Kind::kSyntax, line, column);
  }

  void position(size_t at, int* line, int* column) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
    size_t index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    *line = static_cast<int>(index) + 1;
    *column = static_cast<int>(at - line_starts_[index]) + 1;
  }

  Token make(TokenType type, size_t at, std::string text = {}) const {
    Token t;
    t.type = type;
    t.text = std::move(text);
    position(at, &t.line, &t.column);
    return t;
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) out_.push_back(make(TokenType::kText, at, std::move(text)));
  }

  // The next "{{", "{%" or "{#" at or after `from`.
  size_t find_tag(size_t from) const {
    for (size_t p = src_.find('{', from); p != kNpos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
        return p;
      }
    }
    return kNpos;
  }

  // Skips whitespace (Python's \s) from p.
  size_t skip_space(size_t p) const {
    while (p < src_.size()) {
      unsigned char c = static_cast<unsigned char>(src_[p]);
      if (c < 0x80) {
        if (!py::is_space(c)) break;
        ++p;
        continue;
      }
      std::u32string one = py::decode(src_.substr(p, std::min<size_t>(4, src_.size() - p)));
      if (one.empty() || !py::is_space(one[0])) break;
      std::string encoded;
      py::append_utf8(encoded, one[0]);
      p += encoded.size();
    }
    return p;
  }

  bool all_space(std::string_view s) const {
    for (char32_t c : py::decode(s)) {
      if (!py::is_space(c)) return false;
    }
    return true;
  }

  // Text before a tag loses trailing whitespace with "-", and with lstrip_blocks (block and
  // comment tags, not "+") the spaces and tabs that indent the tag on its own line.
  std::string strip_before_tag(std::string text, char sign, bool is_variable) const {
    if (sign == '-') return py::strip(text, std::nullopt, false, true);
    if (sign == '+' || !o_.lstrip_blocks || is_variable) return text;
    size_t newline = text.rfind('\n');
    size_t line_start = newline == kNpos ? 0 : newline + 1;
    if ((line_start > 0 || line_starting_) && line_start < text.size() &&
        all_space(std::string_view(text).substr(line_start))) {
      text.resize(line_start);
    }
    return text;
  }

  // "{% raw %}" (or "{%- raw -%}"): returns where its body starts, or npos.
  size_t match_raw_begin(size_t tag, char sign) const {
    size_t p = skip_space(tag + 2 + (sign ? 1 : 0));
    if (src_.compare(p, 3, "raw") != 0) return kNpos;
    p = skip_space(p + 3);
    if (src_.compare(p, 3, "-%}") == 0) return skip_space(p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return kNpos;
  }

  void lex_raw(size_t body) {
    line_starting_ = body > 0 && src_[body - 1] == '\n';
    for (size_t p = src_.find("{%", body); p != kNpos; p = src_.find("{%", p + 1)) {
      char sign =
          p + 2 < src_.size() && (src_[p + 2] == '-' || src_[p + 2] == '+') ? src_[p + 2] : 0;
      size_t q = skip_space(p + 2 + (sign ? 1 : 0));
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(q + 6);
      size_t end = match_block_end(q);
      if (end == kNpos) continue;
      emit_text(strip_before_tag(src_.substr(body, p - body), sign, false), body);
      finish_tag(end);
      return;
    }
    if (body < src_.size()) fail(body, "Missing end of raw directive");
    pos_ = src_.size();
  }

  void lex_comment(size_t tag, char sign) {
    size_t content = tag + 2 + (sign ? 1 : 0);
    size_t close = src_.find("#}", content);
    if (close == kNpos) {
      // As Jinja: an unclosed comment with nothing after it ends the template quietly.
      if (content >= src_.size()) {
        pos_ = src_.size();
        return;
      }
      fail(tag, "Missing end of comment tag");
    }
    char end_sign =
        close > content && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    size_t end = close + 2;
    if (end_sign == '-') {
      end = skip_space(end);
    } else if (end_sign != '+' && o_.trim_blocks && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    finish_tag(end);
  }

  // Block end at p: "+%}", "-%}" and the whitespace after it, or "%}" and (trim_blocks) one
  // newline after it. Returns the end of the match or npos.
  size_t match_block_end(size_t p) const {
    if (src_.compare(p, 3, "+%}") == 0) return p + 3;
    if (src_.compare(p, 3, "-%}") == 0) return skip_space(p + 3);
    if (src_.compare(p, 2, "%}") == 0) {
      size_t end = p + 2;
      if (o_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      return end;
    }
    return kNpos;
  }

  size_t match_variable_end(size_t p) const {
    if (src_.compare(p, 3, "-}}") == 0) return skip_space(p + 3);
    if (src_.compare(p, 2, "}}") == 0) return p + 2;
    return kNpos;
  }

  void finish_tag(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  void lex_tag(size_t tag, char kind, char sign) {
    bool variable = kind == '{';
    out_.push_back(make(variable ? TokenType::kVarBegin : TokenType::kBlockBegin, tag));
    size_t p = tag + 2 + (sign ? 1 : 0);
    std::vector<char> closers;
    while (true) {
      if (closers.empty()) {
        size_t end = variable ? match_variable_end(p) : match_block_end(p);
        if (end != kNpos) {
          out_.push_back(make(variable ? TokenType::kVarEnd : TokenType::kBlockEnd, p));
          finish_tag(end);
          return;
        }
      }
      if (p >= src_.size()) {
        fail(tag, std::string("unexpected end of template, expected '") + (variable ? "}}" : "%}") +
                      "'");
      }
      char c = src_[p];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\v') {
        ++p;
      } else if (is_digit(c)) {
        p = lex_number(p);
      } else if (is_name_start(c)) {
        size_t e = p;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        out_.push_back(make(TokenType::kName, p, src_.substr(p, e - p)));
        p = e;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, &closers);
      }
    }
  }

  // (\d+_)*\d+ at p: the end of the match, or npos.
  size_t match_digits(size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return kNpos;
    while (true) {
      while (p < src_.size() && is_digit(src_[p])) ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && is_digit(src_[p + 1])) {
        ++p;
        continue;
      }
      return p;
    }
  }

  size_t lex_number(size_t p) {
    // A float never starts right after a dot: "x.0.1" is x[0][1].
    if (p == 0 || src_[p - 1] != '.') {
      size_t end = match_digits(p);
      size_t q = end;
      bool fraction = false;
      if (q < src_.size() && src_[q] == '.') {
        size_t f = match_digits(q + 1);
        if (f != kNpos) q = f, fraction = true;
      }
      size_t exp_end = kNpos;
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
        exp_end = match_digits(r);
      }
      if (exp_end != kNpos || fraction) {
        size_t stop = exp_end != kNpos ? exp_end : q;
        std::string text = src_.substr(p, stop - p);
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        Token t = make(TokenType::kFloat, p, text);
        auto res = std::from_chars(text.data(), text.data() + text.size(), t.float_value);
        if (res.ec == std::errc::result_out_of_range) {
          size_t e = text.find_first_of("eE");
          t.float_value = e + 1 < text.size() && text[e + 1] == '-' ? 0.0 : INFINITY;
        }
        out_.push_back(std::move(t));
        return stop;
      }
    }
    int base = 10;
    size_t q = p;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      char x = static_cast<char>(src_[p + 1] | 0x20);
      if (x == 'x' || x == 'o' || x == 'b') base = x == 'x' ? 16 : x == 'o' ? 8 : 2;
    }
    auto is_base_digit = [&](char c) {
      if (base == 16) return std::isxdigit(static_cast<unsigned char>(c)) != 0;
      return c >= '0' && c < '0' + base;
    };
    std::string digits;
    if (base != 10) {
      q = p + 2;
      while (q < src_.size()) {
        if (src_[q] == '_' && q + 1 < src_.size() && is_base_digit(src_[q + 1])) ++q;
        if (!is_base_digit(src_[q])) break;
        digits.push_back(src_[q++]);
      }
      if (digits.empty()) base = 10, q = p;  // a lone "0" followed by a name
    }
    if (base == 10) {
      bool zero = src_[p] == '0';
      q = p;
      while (q < src_.size()) {
        size_t d = q;
        if (src_[d] == '_' && !digits.empty()) ++d;
        if (d >= src_.size() || !is_digit(src_[d]) || (zero && src_[d] != '0')) break;
        digits.push_back(src_[d]);
        q = d + 1;
      }
    }
    Token t = make(TokenType::kInteger, p, src_.substr(p, q - p));
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.int_value, base);
    if (res.ec != std::errc()) fail(p, "integer literal too large: " + t.text);
    out_.push_back(std::move(t));
    return q;
  }

  size_t lex_string(size_t p) {
    char quote = src_[p];
    size_t q = p + 1;
    while (q < src_.size() && src_[q] != quote) q += src_[q] == '\\' ? 2 : 1;
    if (q >= src_.size()) fail(p, "unterminated string literal");
    out_.push_back(make(TokenType::kString, p, unescape(p + 1, q)));
    return q + 1;
  }

  // Python's unicode-escape decoding, as Jinja applies it to string literals; unknown
  // escapes keep their backslash.
  std::string unescape(size_t begin, size_t end) const {
    std::string out;
    auto hex_escape = [&](size_t at, int n) -> char32_t {
      if (at + n > end) fail(at, "truncated \\x, \\u or \\U escape");
      char32_t v = 0;
      for (int k = 0; k < n; ++k) {
        char c = src_[at + k];
        if (!std::isxdigit(static_cast<unsigned char>(c)))
          fail(at, "truncated \\x, \\u or \\U escape");
        v = v * 16 + static_cast<char32_t>(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
      }
      if (v > 0x10FFFF) fail(at, "illegal Unicode character");
      return v;
    };
    for (size_t i = begin; i < end; ++i) {
      char c = src_[i];
      if (c != '\\' || i + 1 >= end) {
        out.push_back(c);
        continue;
      }
      char e = src_[++i];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case 'a':
          out.push_back('\a');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'v':
          out.push_back('\v');
          break;
        case 'x':
          py::append_utf8(out, hex_escape(i + 1, 2)), i += 2;
          break;
        case 'u':
          py::append_utf8(out, hex_escape(i + 1, 4)), i += 4;
          break;
        case 'U':
          py::append_utf8(out, hex_escape(i + 1, 8)), i += 8;
          break;
        default:
          if (e >= '0' && e <= '7') {
            char32_t v = 0;
            int n = 0;
            while (n < 3 && i < end && src_[i] >= '0' && src_[i] <= '7') {
              v = v * 8 + static_cast<char32_t>(src_[i] - '0');
              ++i, ++n;
            }
            --i;
            py::append_utf8(out, v);
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    return out;
  }

  size_t lex_operator(size_t p, std::vector<char>* closers) {
    static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwo) {
      if (src_.compare(p, 2, op) == 0) {
        out_.push_back(make(TokenType::kOperator, p, std::string(op)));
        return p + 2;
      }
    }
    char c = src_[p];
    if (std::string_view("+-*/%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
      fail(p, std::string("unexpected char '") + c + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      closers->push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (closers->empty()) fail(p, std::string("unexpected '") + c + "'");
      if (closers->back() != c) {
        fail(p, std::string("unexpected '") + c + "', expected '" + closers->back() + "'");
      }
      closers->pop_back();
    }
    out_.push_back(make(TokenType::kOperator, p, std::string(1, c)));
    return p + 1;
  }

  std::string src_;
  LexerOptions o_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace sy::jinja
