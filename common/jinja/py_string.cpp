#include "common/jinja/py_string.h"

#include "common/utf8.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/jinja/error.h"

namespace sy::jinja::py {
namespace {

// Lone bytes that are not UTF-8 map to U+DC80..U+DCFF and back (Python's surrogateescape).
constexpr char32_t kEscapeBase = 0xDC00;

size_t decode_one(std::string_view s, size_t i, char32_t* out) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) {
    *out = c;
    return 1;
  }
  int n = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 1, cp = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2, cp = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3, cp = c & 0x07, min = 0x10000;
  } else {
    *out = kEscapeBase + c;
    return 1;
  }
  for (int k = 1; k <= n; ++k) {
    if (i + k >= s.size() || (b(i + k) & 0xC0) != 0x80) {
      *out = kEscapeBase + c;
      return 1;
    }
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    *out = kEscapeBase + c;
    return 1;
  }
  *out = cp;
  return n + 1;
}

icu::UnicodeString to_icu(std::string_view s) {
  return icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
}

std::string from_icu(const icu::UnicodeString& u) {
  std::string out;
  u.toUTF8String(out);
  return out;
}

bool is_cased(char32_t c) {
  return u_isupper(c) || u_islower(c) || u_istitle(c);
}

bool is_numeric_char(char32_t c) {
  return u_getIntPropertyValue(c, UCHAR_NUMERIC_TYPE) != U_NT_NONE;
}

bool is_digit_char(char32_t c) {
  int t = u_getIntPropertyValue(c, UCHAR_NUMERIC_TYPE);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT;
}

// Python's str.isprintable() for one code point.
bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_SURROGATE:
    case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED:
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
    case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

bool is_line_break(char32_t c) {
  switch (c) {
    case '\n':
    case '\r':
    case 0x0B:
    case 0x0C:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x85:
    case 0x2028:
    case 0x2029:
      return true;
    default:
      return false;
  }
}

template <typename Pred>
bool all_of_nonempty(std::string_view s, Pred pred) {
  std::u32string u = decode(s);
  if (u.empty()) return false;
  return std::all_of(u.begin(), u.end(), pred);
}

// Clamps a Python slice index into [0, len].
int64_t clamp_index(int64_t i, int64_t len) {
  if (i < 0) i += len;
  return std::clamp<int64_t>(i, 0, len);
}

}  // namespace

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    i += decode_one(s, i, &c);
    out.push_back(c);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c >= kEscapeBase + 0x80 && c <= kEscapeBase + 0xFF)
    out.push_back(static_cast<char>(c - kEscapeBase));  // a raw byte kept through decoding
  else
    sy::append_utf8(c, out);
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c & 0x80) == 0; });
}

size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    i += decode_one(s, i, &c);
    ++n;
  }
  return n;
}

bool is_space(char32_t c) {
  if (c <= 0x20) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return std::isalnum(static_cast<int>(c)) || c == '_';
  return u_isalnum(c) || is_numeric_char(c);
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::u32string set;
  if (chars) set = decode(*chars);
  auto strippable = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_space(c);
  };
  if (is_ascii(s) && (!chars || is_ascii(*chars))) {
    size_t b = 0, e = s.size();
    while (left && b < e && strippable(static_cast<unsigned char>(s[b]))) ++b;
    while (right && e > b && strippable(static_cast<unsigned char>(s[e - 1]))) --e;
    return std::string(s.substr(b, e - b));
  }
  std::u32string u = decode(s);
  size_t b = 0, e = u.size();
  while (left && b < e && strippable(u[b])) ++b;
  while (right && e > b && strippable(u[e - 1])) --e;
  return encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw TemplateError("empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  std::u32string u = decode(s);
  size_t i = 0;
  while (true) {
    while (i < u.size() && is_space(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(u).substr(i)));
      break;
    }
    size_t j = i;
    while (j < u.size() && !is_space(u[j])) ++j;
    out.push_back(encode(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw TemplateError("empty separator");
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  std::u32string u = decode(s);
  size_t i = u.size();
  while (true) {
    while (i > 0 && is_space(u[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(u).substr(0, i)));
      break;
    }
    size_t j = i;
    while (j > 0 && !is_space(u[j - 1])) --j;
    out.push_back(encode(std::u32string_view(u).substr(j, i - j)));
    i = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::u32string u = decode(s);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    if (!is_line_break(u[i])) continue;
    size_t eol = i;
    if (u[i] == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ++i;
    size_t end = keepends ? i + 1 : eol;
    out.push_back(encode(std::u32string_view(u).substr(start, end - start)));
    start = i + 1;
  }
  if (start < u.size()) out.push_back(encode(std::u32string_view(u).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count,
                    size_t max_bytes) {
  std::string out;
  auto append = [&](std::string_view piece) {
    if (out.size() + piece.size() > max_bytes) {
      throw TemplateError("string result is longer than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(piece);
  };
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    std::u32string u = decode(s);
    for (char32_t c : u) {
      if (count < 0 || done < count) {
        append(repl);
        ++done;
      }
      std::string one;
      append_utf8(one, c);
      append(one);
    }
    if (count < 0 || done < count) append(repl);
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    append(s.substr(pos, hit - pos));
    append(repl);
    pos = hit + old.size();
    ++done;
  }
  append(s.substr(pos));
  return out;
}

int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse) {
  std::u32string u = decode(s);
  std::u32string n = decode(sub);
  int64_t len = static_cast<int64_t>(u.size());
  int64_t b = start ? clamp_index(*start, len) : 0;
  int64_t e = end ? clamp_index(*end, len) : len;
  if (start && *start > len) return -1;
  if (e - b < static_cast<int64_t>(n.size())) return -1;
  std::u32string_view window = std::u32string_view(u).substr(b, e - b);
  size_t hit = reverse ? window.rfind(n) : window.find(n);
  return hit == std::u32string_view::npos ? -1 : b + static_cast<int64_t>(hit);
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos)) {
    ++n;
    pos += sub.size();
  }
  return n;
}

std::string upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  return from_icu(to_icu(s).toUpper(icu::Locale::getRoot()));
}

std::string lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  return from_icu(to_icu(s).toLower(icu::Locale::getRoot()));
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (char32_t c : decode(s)) {
    append_utf8(out, u_isupper(c) ? u_tolower(c) : u_islower(c) ? u_toupper(c) : c);
  }
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : decode(s)) {
    append_utf8(out, previous_cased ? u_tolower(c) : u_totitle(c));
    previous_cased = is_cased(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::u32string u = decode(s);
  if (u.empty()) return "";
  std::string out;
  append_utf8(out, u_totitle(u[0]));
  out += lower(encode(std::u32string_view(u).substr(1)));
  return out;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_islower(c) || u_istitle(c)) return false;
    cased = cased || u_isupper(c);
  }
  return cased;
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_isupper(c) || u_istitle(c)) return false;
    cased = cased || u_islower(c);
  }
  return cased;
}

bool is_digit(std::string_view s) {
  return all_of_nonempty(s, is_digit_char);
}
bool is_alpha(std::string_view s) {
  return all_of_nonempty(s, [](char32_t c) { return u_isalpha(c) != 0; });
}
bool is_alnum(std::string_view s) {
  return all_of_nonempty(s, [](char32_t c) { return u_isalpha(c) || is_numeric_char(c); });
}
bool is_space_string(std::string_view s) {
  return all_of_nonempty(s, is_space);
}

std::string repr(std::string_view s) {
  std::u32string u = decode(s);
  bool has_single = u.find(U'\'') != std::u32string::npos;
  bool has_double = u.find(U'"') != std::u32string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (char32_t c : u) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x7F || is_printable(c)) {
      append_utf8(out, c);
    } else {
      const char* fmt = c <= 0xFF ? "\\x%02x" : c <= 0xFFFF ? "\\u%04x" : "\\U%08x";
      std::snprintf(buf, sizeof buf, fmt, static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci is "[-]d[.ddd]e[+-]xx": split into sign, digits and the decimal exponent.
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    i = 1;
  }
  size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  int exp10 = std::stoi(sci.substr(e_pos + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  int ndigits = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += std::string("0.") + std::string(-decpt, '0') + digits;
    } else if (decpt >= ndigits) {
      out += digits + std::string(decpt - ndigits, '0') + ".0";
    } else {
      out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (ndigits > 1) out += std::string(".") + digits.substr(1);
  int e = decpt - 1;
  std::snprintf(buf, sizeof buf, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  return out + buf;
}

}  // namespace sy::jinja::py
