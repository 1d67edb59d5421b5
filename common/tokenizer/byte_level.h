// GPT-2's byte-level alphabet: every byte maps to one printable character, so that BPE
// vocabularies can be stored as text. Bytes that are printable Latin-1 map to themselves;
// the others (controls, space, 0x7F..0xA0, 0xAD) map to U+0100 upward in byte order.
// "Ġ" (U+0120) is the space byte, "Ċ" (U+010A) the newline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sy::tok {

// The character byte `b` is stored as, UTF-8 encoded (1 or 2 bytes).
std::string_view byte_level_char(uint8_t b);

// Appends the byte-level form of raw `bytes` to `out`.
void append_byte_level(std::string_view bytes, std::string& out);

// Appends the bytes that byte-level `text` stands for. Returns false (and leaves `out`
// as it was) when `text` has a character outside the alphabet; such a token is not
// byte-level and decodes to its own text.
bool decode_byte_level(std::string_view text, std::string& out);

}  // namespace sy::tok
