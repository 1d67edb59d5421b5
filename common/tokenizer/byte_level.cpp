#include "common/tokenizer/byte_level.h"

#include <array>

#include "common/utf8.h"

namespace sy::tok {
namespace {

bool maps_to_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<char32_t, 256> char_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  // Indexed by code point; the alphabet lies below U+0144. -1: not in the alphabet.
  std::array<int16_t, 0x144> byte_of_char{};

  Tables() {
    byte_of_char.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = maps_to_itself(b) ? static_cast<char32_t>(b) : next++;
      char_of_byte[b] = c;
      append_utf8(c, utf8_of_byte[b]);
      byte_of_char[c] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view byte_level_char(uint8_t b) {
  return tables().utf8_of_byte[b];
}

void append_byte_level(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (char c : bytes) out.append(t.utf8_of_byte[static_cast<uint8_t>(c)]);
}

bool decode_byte_level(std::string_view text, std::string& out) {
  const Tables& t = tables();
  const size_t old_size = out.size();
  size_t pos = 0;
  while (pos < text.size()) {
    const auto lead = static_cast<uint8_t>(text[pos]);
    // Only 1- and 2-byte characters are in the alphabet; stop at anything longer
    // before decoding, so malformed text cannot make us read past the end.
    const bool two_byte = lead >= 0xC0 && lead < 0xE0 && pos + 1 < text.size() &&
                          (static_cast<uint8_t>(text[pos + 1]) & 0xC0) == 0x80;
    if (lead >= 0x80 && !two_byte) {
      out.resize(old_size);
      return false;
    }
    const char32_t c = next_code_point(text, pos);
    const int b = c < t.byte_of_char.size() ? t.byte_of_char[c] : -1;
    if (b < 0) {
      out.resize(old_size);
      return false;
    }
    out.push_back(static_cast<char>(b));
  }
  return true;
}

}  // namespace sy::tok
