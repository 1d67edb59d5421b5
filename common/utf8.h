// UTF-8 helpers shared by the tokenizer, the chat templates and the HTTP layer. Invalid input is
// repaired the way Python's `bytes.decode("utf-8", errors="replace")` and Rust's
// `String::from_utf8_lossy` do: each maximal ill-formed subpart becomes one U+FFFD
// (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal Subparts").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sy {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// True when `s` is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Appends `in` to `out`, replacing ill-formed subparts with U+FFFD. With `final` false,
// a trailing sequence that is incomplete but could still become valid is left out;
// the return value is how many bytes of `in` were consumed (== in.size() when final).
size_t append_utf8_lossy(std::string_view in, std::string& out, bool final);

// `s` itself when valid, else a repaired copy in `storage`.
std::string_view valid_utf8_view(std::string_view s, std::string& storage);

// Decodes one code point at `s[pos]` of well-formed UTF-8 and advances `pos`.
char32_t next_code_point(std::string_view s, size_t& pos);
// Decodes the code point that ends at `end` (exclusive) of well-formed UTF-8.
char32_t prev_code_point(std::string_view s, size_t end, size_t* start = nullptr);

void append_utf8(char32_t cp, std::string& out);

}  // namespace sy
