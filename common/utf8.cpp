#include "common/utf8.h"

#include <cstdint>
#include <cstring>

namespace sy {
namespace {

// The well-formed byte sequences (Unicode table 3-7): a lead byte fixes the length and
// the range of the second byte; later bytes are always 80..BF.
struct LeadInfo {
  uint8_t length;  // 0: never a lead byte
  uint8_t second_lo;
  uint8_t second_hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // excludes the surrogates
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // nothing above U+10FFFF
  return {0, 0, 0};
}

// Length of the well-formed sequence at s[i], or 0 with `*subpart` set to the length of
// the maximal ill-formed subpart (>= 1), or 0 with `*truncated` set when the input ends
// inside a sequence that is valid so far.
size_t sequence_at(std::string_view s, size_t i, size_t* subpart, bool* truncated) {
  const auto b = static_cast<uint8_t>(s[i]);
  const LeadInfo info = lead_info(b);
  *truncated = false;
  if (info.length == 1) return 1;
  if (info.length == 0) {
    *subpart = 1;
    return 0;
  }
  for (size_t k = 1; k < info.length; ++k) {
    if (i + k >= s.size()) {
      *truncated = true;
      *subpart = k;
      return 0;
    }
    const auto c = static_cast<uint8_t>(s[i + k]);
    const uint8_t lo = k == 1 ? info.second_lo : 0x80;
    const uint8_t hi = k == 1 ? info.second_hi : 0xBF;
    if (c < lo || c > hi) {
      *subpart = k;
      return 0;
    }
  }
  return info.length;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs are the common case; skip them eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t word;
      std::memcpy(&word, s.data() + i, 8);
      if (word & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    size_t subpart = 0;
    bool truncated = false;
    const size_t n = sequence_at(s, i, &subpart, &truncated);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

size_t append_utf8_lossy(std::string_view in, std::string& out, bool final) {
  size_t i = 0;
  size_t run_start = 0;  // start of the valid bytes not yet copied
  while (i < in.size()) {
    size_t subpart = 0;
    bool truncated = false;
    const size_t n = sequence_at(in, i, &subpart, &truncated);
    if (n > 0) {
      i += n;
      continue;
    }
    out.append(in.substr(run_start, i - run_start));
    if (truncated && !final) return i;
    out.append(kReplacementChar);
    i += subpart;
    run_start = i;
  }
  out.append(in.substr(run_start, i - run_start));
  return i;
}

std::string_view valid_utf8_view(std::string_view s, std::string& storage) {
  if (is_valid_utf8(s)) return s;
  storage.clear();
  append_utf8_lossy(s, storage, /*final=*/true);
  return storage;
}

char32_t next_code_point(std::string_view s, size_t& pos) {
  const auto b = static_cast<uint8_t>(s[pos]);
  if (b < 0x80) {
    ++pos;
    return b;
  }
  const size_t n = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  char32_t cp = b & (0x7F >> n);
  for (size_t k = 1; k < n && pos + k < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<uint8_t>(s[pos + k]) & 0x3F);
  }
  pos += n;
  return cp;
}

char32_t prev_code_point(std::string_view s, size_t end, size_t* start) {
  size_t i = end;
  do {
    --i;
  } while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80);
  if (start) *start = i;
  size_t pos = i;
  return next_code_point(s, pos);
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace sy
