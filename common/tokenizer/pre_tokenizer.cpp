#include "common/tokenizer/pre_tokenizer.h"

#include "common/error.h"
#include "common/utf8.h"

namespace sy::tok {
namespace {

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// UTF-8 → UTF-16 for ICU, remembering where each UTF-16 unit came from so that match
// positions map back to byte offsets without converting the pieces.
void to_utf16(std::string_view text, std::u16string& u16, std::vector<uint32_t>& offsets) {
  u16.clear();
  offsets.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    const auto start = static_cast<uint32_t>(pos);
    const char32_t cp = next_code_point(text, pos);
    if (cp < 0x10000) {
      u16.push_back(static_cast<char16_t>(cp));
      offsets.push_back(start);
    } else {
      u16.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      u16.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
      offsets.push_back(start);
      offsets.push_back(start);
    }
  }
  offsets.push_back(static_cast<uint32_t>(text.size()));
}

}  // namespace

std::string onig_to_icu_pattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    const char next = pattern[++i];
    if (next == 's') {
      out.append("\\p{White_Space}");
    } else if (next == 'S') {
      out.append("\\P{White_Space}");
    } else {
      out.push_back('\\');
      out.push_back(next);
    }
  }
  return out;
}

PreTokenizer::PreTokenizer(const TokenizerSpec& spec) {
  if (spec.nfc) {
    UErrorCode status = U_ZERO_ERROR;
    nfc_ = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) {
      throw ModelFileError(spec.label + ": ICU NFC normalizer unavailable: " + u_errorName(status));
    }
  }
  for (const PreStep& step : spec.pre_steps) {
    kinds_.push_back(step.kind);
    if (step.kind != PreStep::Kind::kSplit) {
      patterns_.push_back(nullptr);
      continue;
    }
    const std::string icu_pattern = step.literal ? step.pattern : onig_to_icu_pattern(step.pattern);
    UErrorCode status = U_ZERO_ERROR;
    UParseError parse_error;
    std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
        icu::UnicodeString::fromUTF8(icu_pattern),
        static_cast<uint32_t>(step.literal ? UREGEX_LITERAL : 0), parse_error, status));
    if (U_FAILURE(status) || !compiled) {
      throw ModelFileError(spec.label + ": pre-tokenizer regex '" + step.pattern +
                           "' does not compile: " + u_errorName(status));
    }
    patterns_.push_back(std::move(compiled));
  }
}

std::string_view PreTokenizer::normalize(std::string_view text, std::string& storage) const {
  if (!nfc_ || is_ascii(text)) return text;  // ASCII is always in NFC
  const icu::UnicodeString u =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), text.size()));
  UErrorCode status = U_ZERO_ERROR;
  if (nfc_->isNormalized(u, status) && U_SUCCESS(status)) return text;
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = nfc_->normalize(u, status);
  if (U_FAILURE(status)) return text;  // only on allocation failure; keep the input
  storage.clear();
  normalized.toUTF8String(storage);
  return storage;
}

void PreTokenizer::split(std::string_view text, Scratch& s,
                         std::vector<std::string_view>& pieces) const {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back(text);
  if (s.matchers.size() < patterns_.size()) s.matchers.resize(patterns_.size());
  for (size_t step = 0; step < kinds_.size(); ++step) {
    s.next.clear();
    for (std::string_view piece : pieces) {
      if (kinds_[step] == PreStep::Kind::kPrefixSpace) {
        if (piece.front() == ' ') {
          s.next.push_back(piece);
        } else {
          s.next.push_back(s.owned.emplace_back(" ").append(piece));
        }
      } else {
        split_one(step, piece, s, s.next);
      }
    }
    pieces.swap(s.next);
  }
}

// Isolated behavior: every match is a piece, and so is every stretch between matches.
void PreTokenizer::split_one(size_t step, std::string_view text, Scratch& s,
                             std::vector<std::string_view>& out) const {
  to_utf16(text, s.utf16, s.utf8_offsets);
  // A read-only alias: the matcher reads the UTF-16 buffer without a copy.
  s.input.setTo(false, s.utf16.data(), static_cast<int32_t>(s.utf16.size()));
  UErrorCode status = U_ZERO_ERROR;
  auto& matcher = s.matchers[step];
  if (!matcher) {
    matcher.reset(patterns_[step]->matcher(s.input, status));
  } else {
    matcher->reset(s.input);
  }
  if (U_FAILURE(status) || !matcher) {
    out.push_back(text);  // only on allocation failure
    return;
  }
  uint32_t last = 0;  // UTF-8 end of the previous piece
  while (matcher->find(status) && U_SUCCESS(status)) {
    const uint32_t begin = s.utf8_offsets[matcher->start(status)];
    const uint32_t end = s.utf8_offsets[matcher->end(status)];
    if (end == begin) continue;
    if (begin > last) out.push_back(text.substr(last, begin - last));
    out.push_back(text.substr(begin, end - begin));
    last = end;
  }
  if (last < text.size()) out.push_back(text.substr(last));
}

}  // namespace sy::tok
