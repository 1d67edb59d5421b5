// StreamAccumulator on made-up OpenAI streams: what counts as a token event, how usage
// and token counts are cross-checked, and which endings are errors. A table of cases,
// each a list of events, the request's max_tokens and the expected outcome.
#include "bench/loadgen/stream_accumulator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sy::bench {
namespace {

using std::chrono::milliseconds;

struct Ev {
  std::string type;  // "message" unless said
  std::string data;
};

Ev text(const std::string& t) {
  return {"message", R"({"choices":[{"index":0,"text":")" + t + R"(","finish_reason":null}]})"};
}
Ev delta(const std::string& t) {
  return {"message", R"({"choices":[{"index":0,"delta":{"content":")" + t + R"("}}]})"};
}
Ev usage(int64_t completion) {
  return {"message", R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":)" +
                         std::to_string(completion) +
                         R"(,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":3}}})"};
}
Ev done() {
  return {"message", "[DONE]"};
}

struct Case {
  const char* name;
  std::vector<Ev> events;
  int64_t max_tokens = 3;
  bool sse_pending = false;  // the body ended mid-event
  ErrorKind error = ErrorKind::kNone;
  std::string message_has;      // a piece of the error message
  int64_t content_events = -1;  // these three are checked when ok
  int64_t streamed_tokens = -1;
  std::string text;
};

Case good(const char* name, std::vector<Ev> events, int64_t max_tokens, int64_t content_events,
          int64_t streamed_tokens, std::string text) {
  return {name, std::move(events), max_tokens,      false,          ErrorKind::kNone,
          "",   content_events,    streamed_tokens, std::move(text)};
}

Case bad(const char* name, std::vector<Ev> events, int64_t max_tokens, bool sse_pending,
         ErrorKind error, std::string message_has) {
  return {name, std::move(events), max_tokens, sse_pending, error, std::move(message_has), -1, -1,
          ""};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      good("completions_ok", {text("a"), text("b"), text("c"), usage(3), done()}, 3, 3, 3, "abc"),
      good("chat_role_delta_is_not_a_token",
           {{"message", R"({"choices":[{"delta":{"role":"assistant"}}]})"},
            delta("x"),
            delta("y"),
            usage(2),
            done()},
           2, 2, 2, "xy"),
      good("chat_reasoning_counts",
           {{"message", R"({"choices":[{"delta":{"reasoning_content":"hm"}}]})"},
            delta("ok"),
            usage(2),
            done()},
           2, 2, 2, "hmok"),
      good("token_ids_count_exactly",
           {{"message", R"({"choices":[{"text":"ab","token_ids":[1,2]}]})"},
            {"message", R"({"choices":[{"text":"","token_ids":[3]}]})"},
            usage(3),
            done()},
           3, 2, 3, "ab"),
      good("logprobs_count_exactly",
           {{"message", R"({"choices":[{"text":"ab","logprobs":{"tokens":["a","b"]}}]})"},
            {"message",
             R"({"choices":[{"delta":{"content":"c"},"logprobs":{"content":[{"token":"c"}]}}]})"},
            usage(3),
            done()},
           3, 2, 3, "abc"),
      good("fewer_text_events_than_tokens_is_allowed", {text("ab"), text("c"), usage(3), done()}, 3,
           2, 2, "abc"),
      good(
          "usage_in_last_content_chunk",
          {text("a"),
           {"message",
            R"({"choices":[{"text":"b","finish_reason":"length"}],"usage":{"completion_tokens":2}})"},
           done()},
          2, 2, 2, "ab"),
      // The last event: text the server held back (a possible stop string), flushed at the end.
      good("held_back_text_flushed_at_the_end", {text("a"), text("b"), text("!"), usage(2), done()}, 2, 3, 3, "ab!"),
      good("other_event_types_ignored", {{"ping", "{}"}, text("a"), usage(1), done()}, 1, 1, 1,
           "a"),
      good("null_usage_before_the_end",
           {{"message", R"({"choices":[{"text":"a"}],"usage":null})"}, usage(1), done()}, 1, 1, 1,
           "a"),

      bad("short_response", {text("a"), text("b"), usage(2), done()}, 3, false,
          ErrorKind::kValidation, "completion_tokens 2"),
      bad("long_response", {text("a"), text("b"), usage(4), done()}, 3, false,
          ErrorKind::kValidation, "completion_tokens 4"),
      bad("exact_count_disagrees_with_usage",
          {{"message", R"({"choices":[{"text":"ab","token_ids":[1,2]}]})"}, usage(3), done()}, 3,
          false, ErrorKind::kValidation, "events carried 2 tokens"),
      bad("more_events_than_tokens", {text("a"), text("b"), text("c"), text("d"), usage(2), done()}, 2, false,
          ErrorKind::kValidation, "4 token events for 2 tokens"),
      bad("empty_text",
          {{"message", R"({"choices":[{"text":"","token_ids":[1,2]}]})"}, usage(2), done()}, 2,
          false, ErrorKind::kValidation, "empty text"),
      bad("no_token_events", {usage(2), done()}, 2, false, ErrorKind::kValidation,
          "no event carried a token"),
      bad("stopped_early_by_stop",
          {{"message", R"({"choices":[{"text":"a","finish_reason":"stop"}]})"}, usage(1), done()},
          1, false, ErrorKind::kValidation, "finish_reason 'stop'"),
      bad("no_usage", {text("a"), done()}, 1, false, ErrorKind::kProtocol, "no usage"),
      bad("no_done", {text("a"), usage(1)}, 1, false, ErrorKind::kTruncated, "without [DONE]"),
      bad("cut_mid_event", {text("a")}, 1, true, ErrorKind::kTruncated, "mid-event"),
      bad("error_event", {text("a"), {"error", R"({"error":{"message":"engine died"}})"}, done()},
          1, false, ErrorKind::kStreamError, "engine died"),
      bad("error_object_in_data",
          {text("a"), {"message", R"({"error":{"message":"out of memory","code":503}})"}}, 1, false,
          ErrorKind::kStreamError, "out of memory"),
      bad("not_json", {text("a"), {"message", "hello"}}, 1, false, ErrorKind::kProtocol,
          "not a JSON object"),
      bad("invalid_utf8",
          {{"message", "{\"choices\":[{\"text\":\"\xC3\x28\"}]}"}, usage(1), done()}, 1, false,
          ErrorKind::kProtocol, "not valid UTF-8"),
      bad("lone_surrogate_escape",
          {{"message", R"({"choices":[{"text":"\ud800"}]})"}, usage(1), done()}, 1, false,
          ErrorKind::kProtocol, "not a JSON object"),
      bad("data_after_done", {text("a"), usage(1), done(), text("b")}, 1, false,
          ErrorKind::kProtocol, "after [DONE]"),
  };
  return kCases;
}

class StreamCase : public ::testing::TestWithParam<size_t> {};

TEST_P(StreamCase, Outcome) {
  const Case& c = cases()[GetParam()];
  RequestRecord r;
  r.max_tokens = c.max_tokens;
  const Clock::time_point t0 = Clock::now();
  r.issued = t0;
  StreamAccumulator acc(r);
  int ms = 0;
  for (const Ev& e : c.events) {
    http::SseEvent ev;
    ev.type = e.type;
    ev.data = e.data;
    acc.on_event(ev, t0 + milliseconds(10 * ++ms));
  }
  acc.finish(t0 + milliseconds(10 * ++ms), c.sse_pending);
  EXPECT_EQ(r.error, c.error) << error_kind_name(r.error) << ": " << r.error_message;
  if (!c.message_has.empty()) {
    EXPECT_NE(r.error_message.find(c.message_has), std::string::npos) << r.error_message;
  }
  if (r.ok()) {
    EXPECT_EQ(r.content_events, c.content_events);
    EXPECT_EQ(r.streamed_tokens, c.streamed_tokens);
    EXPECT_EQ(r.text, c.text);
    EXPECT_EQ(r.completion_tokens, c.max_tokens);
    ASSERT_FALSE(r.arrivals.empty());
    EXPECT_GT(r.ttft_s(), 0);
    EXPECT_GE(r.e2e_s(), r.ttft_s());
  }
}

INSTANTIATE_TEST_SUITE_P(Table, StreamCase, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases()[info.param].name;
                         });

TEST(StreamAccumulator, TimesComeFromTheEvents) {
  RequestRecord r;
  r.max_tokens = 2;
  const Clock::time_point t0 = Clock::now();
  r.issued = t0;
  StreamAccumulator acc(r);
  auto at = [&](int ms) { return t0 + milliseconds(ms); };
  http::SseEvent role{"message", R"({"choices":[{"delta":{"role":"assistant","content":""}}]})",
                      ""};
  acc.on_event(role, at(5));  // an empty delta is not the first token
  acc.on_event({"message", R"({"choices":[{"delta":{"content":"a"}}]})", ""}, at(30));
  acc.on_event({"message", R"({"choices":[{"delta":{"content":"b"}}]})", ""}, at(45));
  acc.on_event(
      {"message",
       R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}})",
       ""},
      at(46));
  acc.on_event({"message", "[DONE]", ""}, at(50));
  acc.finish(at(60), false);
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_NEAR(r.ttft_s(), 0.030, 1e-9);
  EXPECT_NEAR(r.e2e_s(), 0.050, 1e-9);  // at [DONE], not at the end of the body
  ASSERT_EQ(r.itl_s().size(), 1u);
  EXPECT_NEAR(r.itl_s()[0], 0.015, 1e-9);
  EXPECT_EQ(r.prompt_tokens, 9);
  EXPECT_EQ(r.cached_tokens, 4);
}

}  // namespace
}  // namespace sy::bench
