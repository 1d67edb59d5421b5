// Python's str operations on UTF-8 text, as chat templates call them: strip/split/replace/
// find count code points (not bytes) and treat Unicode whitespace as Python does. Bytes that
// are not valid UTF-8 survive a decode/encode round trip unchanged (as lone U+DCxx, the way
// Python's surrogateescape keeps them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sy::jinja::py {

std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t c);
// Number of code points.
size_t length(std::string_view s);
bool is_ascii(std::string_view s);

// str.isspace() for one code point.
bool is_space(char32_t c);
// \w in Python's re: letters, digits and underscore.
bool is_word_char(char32_t c);

// str.strip/lstrip/rstrip; `chars` absent strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split(sep, maxsplit) and str.rsplit; `sep` absent splits on runs of whitespace.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace; `count` < 0 replaces all. Throws TemplateError when the result would exceed
// `max_bytes`.
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count,
                    size_t max_bytes);
// str.find / str.rfind with Python's start/end (code point indices, negative from the end);
// returns a code point index or -1.
int64_t find(std::string_view s, std::string_view sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse);
int64_t count(std::string_view s, std::string_view sub);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string swapcase(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
bool is_upper(std::string_view s);           // str.isupper()
bool is_lower(std::string_view s);           // str.islower()
bool is_digit(std::string_view s);           // str.isdigit()
bool is_alpha(std::string_view s);           // str.isalpha()
bool is_alnum(std::string_view s);           // str.isalnum()
bool is_space_string(std::string_view s);    // str.isspace()

// repr() of a str: quoted, with Python's escapes.
std::string repr(std::string_view s);
// repr() of a float: the shortest text that reads back the same, in Python's layout
// ("1.0", "1e+16", "1e-05", "inf", "nan").
std::string float_repr(double d);

}  // namespace sy::jinja::py
