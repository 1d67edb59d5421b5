// JsonScanner against nlohmann's parser: on well-formed objects, on every prefix of them
// (never a reject, done only at the end), and on mutated documents (it completes exactly
// when the parser accepts).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/tool_calls/json_scanner.h"

namespace sy {
namespace {

// kDone at the last byte and no reject before it.
bool scans_whole(const std::string& s) {
  JsonScanner sc;
  for (size_t i = 0; i < s.size(); ++i) {
    const JsonScanner::Result r = sc.push(s[i]);
    if (r == JsonScanner::Result::kReject) return false;
    if (r == JsonScanner::Result::kDone) return i + 1 == s.size();
  }
  return false;
}

const std::vector<std::string> kDocs = {
    R"({})",
    R"({"a":1})",
    R"( {"city": "Paris", "unit": "celsius"})",
    R"({"q": "braces } { and ] [ inside", "t": "</tool_call> and <tool_call>"})",
    R"({"esc": "quote \" backslash \\ slash \/ \b\f\n\r\t \u00e9 \uD83D\uDE00"})",
    R"({"n": [0, -0, 1.5, -2.25e10, 3E-2, 4e+5, 123456789], "b": [true, false, null]})",
    R"({"nested": {"a": [{"b": {"c": []}}, [[]], {}]}, "x": "日本語 😀"})",
    "{\n  \"k\" : \"v\" ,\n  \"l\" : [ 1 , 2 ]\n}",
};

TEST(JsonScanner, AcceptsWellFormedObjectsAndEveryPrefix) {
  for (const std::string& doc : kDocs) {
    EXPECT_TRUE(scans_whole(doc)) << doc;
    JsonScanner sc;
    for (size_t i = 0; i + 1 < doc.size(); ++i)
      ASSERT_EQ(sc.push(doc[i]), JsonScanner::Result::kMore) << doc << " at " << i;
  }
}

TEST(JsonScanner, RefusesMalformedAndNonObjects) {
  for (const std::string bad :
       {R"([1])", R"("s")", R"(1)", R"({"a" 1})", R"({"a":})", R"({,})", R"({"a":1,})", R"({"a":01})",
        R"({"a":1.})", R"({"a":.5})", R"({"a":-})", R"({"a":tru})", R"({"a":"\x"})", R"({"a":"\u12G4"})",
        "{\"a\":\"line\nbreak\"}", R"({'a':1})", R"({"a":[1,]})", R"({"a":1]})", R"({"a":[}])"})
    EXPECT_FALSE(scans_whole(bad)) << bad;
}

TEST(JsonScanner, AgreesWithTheParserOnMutatedDocuments) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,.-+eE0123456789 \\tfnul\"a";
  int checked = 0;
  for (const std::string& doc : kDocs) {
    // The parser also checks UTF-8 and surrogate pairs, which the scanner leaves alone
    // (the text comes from a detokenizer): mutate only ASCII, away from surrogates.
    if (doc.find("\\uD8") != std::string::npos) continue;
    for (int n = 0; n < 400; ++n) {
      std::string s = doc;
      size_t pos = rng() % s.size();
      while (static_cast<unsigned char>(s[pos]) >= 0x80) pos = rng() % s.size();
      switch (rng() % 3) {
        case 0: s.erase(pos, 1); break;
        case 1: s.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
        default: s[pos] = alphabet[rng() % alphabet.size()]; break;
      }
      // Trailing whitespace is not the scanner's business (it stops at the value's end).
      while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
      const auto parsed = nlohmann::json::parse(s, nullptr, false);
      const bool want = !parsed.is_discarded() && parsed.is_object() && !s.empty() && s.front() != ' ';
      if (!s.empty() && s.front() == ' ') continue;  // leading whitespace: covered above
      EXPECT_EQ(scans_whole(s), want) << s;
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

}  // namespace
}  // namespace sy
