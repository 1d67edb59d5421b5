// SseParser against the WHATWG event-stream rules. Every case is fed whole, split in two
// at every byte and one byte at a time; all feedings must give the same events.
#include "common/http/sse_parser.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace sy::http {
namespace {

using namespace std::string_literals;

struct Expected {
  std::string type;
  std::string data;
  std::string id;
};

struct Case {
  const char* name;
  std::string input;
  std::vector<Expected> events;
  bool pending_at_end = false;  // finish() reports an undispatched event
  int64_t comments = 0;
};

struct Outcome {
  std::vector<SseEvent> events;
  bool ok = true;
  bool pending = false;
  int64_t comments = 0;
  std::optional<int64_t> retry;
};

Outcome run(const std::vector<std::string_view>& chunks,
            size_t max_event_bytes = SseParser::kDefaultMaxEventBytes) {
  SseParser p(max_event_bytes);
  Outcome out;
  for (std::string_view c : chunks) out.ok = p.feed(c, out.events) && out.ok;
  out.pending = p.finish();
  out.comments = p.comments();
  out.retry = p.retry_ms();
  return out;
}

// Every way of feeding `input` this test uses: whole, each two-way split, byte by byte.
std::vector<std::vector<std::string_view>> feedings(std::string_view input) {
  std::vector<std::vector<std::string_view>> all;
  all.push_back({input});
  for (size_t cut = 0; cut <= input.size(); ++cut)
    all.push_back({input.substr(0, cut), input.substr(cut)});
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < input.size(); ++i) bytes.push_back(input.substr(i, 1));
  all.push_back(bytes);
  return all;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"single", "data: hello\n\n", {{"message", "hello", ""}}},
      {"two_events", "data: a\n\ndata: b\n\n", {{"message", "a", ""}, {"message", "b", ""}}},
      {"multi_line_data", "data: a\ndata: b\ndata:\n\n", {{"message", "a\nb\n", ""}}},
      {"crlf", "data: a\r\ndata: b\r\n\r\n", {{"message", "a\nb", ""}}},
      {"cr_only", "data: a\rdata: b\r\r", {{"message", "a\nb", ""}}},
      {"cr_then_crlf_is_blank_line", "data: a\r\r\n", {{"message", "a", ""}}},
      {"lf_then_crlf_is_blank_line", "data: a\n\r\n", {{"message", "a", ""}}},
      {"crlf_then_lf", "data: a\r\n\n", {{"message", "a", ""}}},
      {"mixed_line_ends", "event: x\rdata: 1\r\ndata: 2\n\r\n", {{"x", "1\n2", ""}}},
      {"comment", ": ping\n\ndata: x\n: another\n\n", {{"message", "x", ""}}, false, 2},
      {"comment_only_stream", ":keep-alive\n:keep-alive\n", {}, false, 2},
      {"event_type", "event: error\ndata: {\"error\":1}\n\n", {{"error", "{\"error\":1}", ""}}},
      {"event_type_resets",
       "event: a\ndata: 1\n\ndata: 2\n\n",
       {{"a", "1", ""}, {"message", "2", ""}}},
      {"no_space_after_colon", "data:x\n\n", {{"message", "x", ""}}},
      {"only_one_space_removed", "data:  x \n\n", {{"message", " x ", ""}}},
      {"colon_in_value", "data: a:b: c\n\n", {{"message", "a:b: c", ""}}},
      {"field_without_colon", "data\n\n", {{"message", "", ""}}},
      {"empty_data_lines", "data\ndata\n\n", {{"message", "\n", ""}}},
      {"unknown_field_ignored", "foo: bar\ndata: x\nDATA: y\n\n", {{"message", "x", ""}}},
      {"no_data_no_event", "event: x\n\ndata: y\n\n", {{"message", "y", ""}}},
      {"id_persists",
       "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
       {{"message", "a", "7"}, {"message", "b", "7"}, {"message", "c", ""}}},
      {"id_with_nul_ignored",
       "id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n"s,
       {{"message", "a", "1"}, {"message", "b", "1"}}},
      {"id_without_data_still_updates", "id: 5\n\ndata: a\n\n", {{"message", "a", "5"}}},
      {"bom_skipped_once",
       "\xEF\xBB\xBF"
       "data: a\n\n\xEF\xBB\xBF"
       "data: b\n\n",
       {{"message", "a", ""}}},
      {"partial_bom_is_data",
       "\xEF\xBB"
       "data: a\n\ndata: b\n\n",
       {{"message", "b", ""}}},
      {"truncated_event", "data: a\n\ndata: b\n", {{"message", "a", ""}}, true},
      {"truncated_line", "data: a\n\ndata: b", {{"message", "a", ""}}, true},
      {"blank_lines_only", "\n\n\r\n\r", {}},
      {"openai_stream",
       "data: {\"choices\":[{\"text\":\"Hi\"}]}\n\n"
       "data: {\"choices\":[{\"text\":\" there\"}]}\n\n"
       "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
       "data: [DONE]\n\n",
       {{"message", "{\"choices\":[{\"text\":\"Hi\"}]}", ""},
        {"message", "{\"choices\":[{\"text\":\" there\"}]}", ""},
        {"message", "{\"choices\":[],\"usage\":{\"completion_tokens\":2}}", ""},
        {"message", "[DONE]", ""}}},
      {"utf8_passes_through",
       "data: caf\xC3\xA9 \xF0\x9F\x9A\x82\n\n",
       {{"message", "caf\xC3\xA9 \xF0\x9F\x9A\x82", ""}}},
  };
  return kCases;
}

class SseParserCase : public ::testing::TestWithParam<size_t> {};

TEST_P(SseParserCase, SameEventsForEveryChunking) {
  const Case& c = cases()[GetParam()];
  for (const auto& chunks : feedings(c.input)) {
    std::string how = std::to_string(chunks.size()) + " chunks, first " +
                      std::to_string(chunks[0].size()) + " bytes";
    const Outcome out = run(chunks);
    ASSERT_TRUE(out.ok) << how;
    ASSERT_EQ(out.events.size(), c.events.size()) << how;
    for (size_t i = 0; i < c.events.size(); ++i) {
      EXPECT_EQ(out.events[i].type, c.events[i].type) << how << ", event " << i;
      EXPECT_EQ(out.events[i].data, c.events[i].data) << how << ", event " << i;
      EXPECT_EQ(out.events[i].id, c.events[i].id) << how << ", event " << i;
    }
    EXPECT_EQ(out.pending, c.pending_at_end) << how;
    EXPECT_EQ(out.comments, c.comments) << how;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, SseParserCase, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases()[info.param].name;
                         });

TEST(SseParser, Retry) {
  for (const auto& chunks : feedings("retry: 3000\n\nretry: 3a\nretry:\nretry: -1\ndata: x\n\n")) {
    const Outcome out = run(chunks);
    ASSERT_EQ(out.events.size(), 1u);
    ASSERT_TRUE(out.retry.has_value());
    EXPECT_EQ(*out.retry, 3000);
  }
  EXPECT_FALSE(run({"retry: 99999999999999999999999\n\n"}).retry.has_value());
}

TEST(SseParser, EventSizeLimitIsExactForEveryChunking) {
  // The bound covers the line being read, so "data: " plus n bytes fits when 6 + n <= max.
  constexpr size_t kMax = 64;
  const std::string fits = "data: " + std::string(kMax - 6, 'a') + "\n\n";
  const std::string too_big = "data: " + std::string(kMax - 5, 'a') + "\n\n";
  for (const auto& chunks : feedings(fits)) {
    const Outcome out = run(chunks, kMax);
    EXPECT_TRUE(out.ok);
    ASSERT_EQ(out.events.size(), 1u);
    EXPECT_EQ(out.events[0].data.size(), kMax - 6);
  }
  for (const auto& chunks : feedings(too_big)) {
    const Outcome out = run(chunks, kMax);
    EXPECT_FALSE(out.ok);
    EXPECT_TRUE(out.events.empty());
  }
}

TEST(SseParser, ManyDataLinesAddUpToTheLimit) {
  // Each line is small; together they exceed the bound for one event.
  std::string input = "data: first\n\n";
  for (int i = 0; i < 20; ++i) input += "data: 0123456789\n";
  input += "\n";
  SseParser p(128);
  std::vector<SseEvent> events;
  EXPECT_FALSE(p.feed(input, events));
  EXPECT_EQ(p.error(), SseError::kEventTooLarge);
  ASSERT_EQ(events.size(), 1u);  // the event before the oversized one was delivered
  EXPECT_EQ(events[0].data, "first");
}

TEST(SseParser, EndlessLineFailsWithoutGrowing) {
  SseParser p(1024);
  std::vector<SseEvent> events;
  const std::string chunk(100, 'x');
  int accepted = 0;
  while (p.feed(chunk, events) && accepted < 1000) ++accepted;
  EXPECT_EQ(accepted, 10);  // 1000 bytes held; the eleventh chunk would exceed 1024
  EXPECT_EQ(p.error(), SseError::kEventTooLarge);
}

TEST(SseParser, ErrorIsSticky) {
  SseParser p(16);
  std::vector<SseEvent> events;
  EXPECT_FALSE(p.feed("data: 0123456789abcdef\n\n", events));
  EXPECT_FALSE(p.feed("data: ok\n\n", events));
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, LongStreamOfSmallEventsNeedsNoMoreThanOneEvent) {
  // The bound is per event, not per stream.
  SseParser p(32);
  std::vector<SseEvent> events;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(p.feed("data: token\n\n", events));
  EXPECT_EQ(events.size(), 1000u);
  EXPECT_FALSE(p.finish());
}

}  // namespace
}  // namespace sy::http
