// The gateway ↔ worker wire format: /internal/generate bodies round-trip through
// builder and parser, bad bodies are refused with the field named, and the stream's
// events (tokens, finish, kv-events with full 64-bit hashes) round-trip exactly.
#include <gtest/gtest.h>

#include "common/protocol/internal_api.h"

namespace sy {
namespace {

TEST(InternalApi, GenerateBodyRoundTrips) {
  InternalGenerateRequest r;
  r.request_id = "gw-42:a.b_c";
  r.prompt_ids = {1, 2, 3};
  r.resume_ids = {7, 8};
  r.sampling.max_tokens = 20;
  r.sampling.temperature = 0.7f;
  r.sampling.top_k = 5;
  r.sampling.seed = 18446744073709551615ull;
  r.sampling.stop = {"\n\n"};
  r.sampling.stop_token_ids = {9};
  r.sampling.logprobs = 2;
  r.priority = kPriorityInteractive;
  InternalGenerateRequest back;
  ASSERT_FALSE(parse_internal_generate(internal_generate_body(r), back));
  EXPECT_EQ(back.request_id, r.request_id);
  EXPECT_EQ(back.prompt_ids, r.prompt_ids);
  EXPECT_EQ(back.resume_ids, r.resume_ids);
  EXPECT_EQ(back.sampling.max_tokens, 20);
  EXPECT_EQ(back.sampling.temperature, 0.7f);
  EXPECT_EQ(back.sampling.top_k, 5);
  EXPECT_EQ(back.sampling.seed, r.sampling.seed);
  EXPECT_EQ(back.sampling.stop, r.sampling.stop);
  EXPECT_EQ(back.sampling.stop_token_ids, r.sampling.stop_token_ids);
  EXPECT_EQ(back.sampling.logprobs, 2);
  EXPECT_EQ(back.priority, kPriorityInteractive);
}

TEST(InternalApi, BadGenerateBodies) {
  struct Row {
    std::string body, param;
  };
  const std::vector<Row> rows = {
      {R"({"prompt_ids":[1],"max_tokens":1})", "request_id"},
      {R"({"request_id":"a b","prompt_ids":[1],"max_tokens":1})", "request_id"},
      {R"({"request_id":"","prompt_ids":[1],"max_tokens":1})", "request_id"},
      {R"({"request_id":"r","max_tokens":1})", "prompt_ids"},
      {R"({"request_id":"r","prompt_ids":[],"max_tokens":1})", "prompt_ids"},
      {R"({"request_id":"r","prompt_ids":[1,-1],"max_tokens":1})", "prompt_ids"},
      {R"({"request_id":"r","prompt_ids":[1],"resume_ids":"x","max_tokens":1})", "resume_ids"},
      {R"({"request_id":"r","prompt_ids":[1]})", "max_tokens"},
      {R"({"request_id":"r","prompt_ids":[1],"max_tokens":0})", "max_tokens"},
      {R"({"request_id":"r","prompt_ids":[1],"max_tokens":1,"temperature":-1})", "temperature"},
      {R"({"request_id":"r","prompt_ids":[1],"max_tokens":1,"logprobs":30})", "logprobs"},
      {R"({"request_id":"r","prompt_ids":[1],"max_tokens":1,"priority":"now"})", "priority"},
      {R"({"request_id":"r","prompt_ids":[1],"max_tokens":1,"seed":1.5})", "seed"},
  };
  for (const auto& row : rows) {
    InternalGenerateRequest r;
    auto e = parse_internal_generate(row.body, r);
    ASSERT_TRUE(e) << row.body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, row.param) << row.body << ": " << e->message;
  }
}

std::string data_of(const std::string& event, const std::string& name) {
  const std::string head = "event: " + name + "\ndata: ";
  EXPECT_EQ(event.rfind(head, 0), 0u) << event;
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  return event.substr(head.size(), event.size() - head.size() - 2);
}

TEST(InternalApi, TokenAndFinishEventsRoundTrip) {
  InternalTokens t;
  t.index = 5;
  t.ids = {10, 11};
  t.text = "h\xC3\xA9";
  t.logprobs = {{-0.5f, {{10, -0.5f}, {3, -1.5f}}}, {-0.25f, {}}};
  InternalTokens tb;
  ASSERT_FALSE(parse_internal_tokens(data_of(internal_tokens_event(t), "tokens"), tb));
  EXPECT_EQ(tb.index, 5);
  EXPECT_EQ(tb.ids, t.ids);
  EXPECT_EQ(tb.text, t.text);
  ASSERT_EQ(tb.logprobs.size(), 2u);
  EXPECT_EQ(tb.logprobs[0].logprob, -0.5f);
  EXPECT_EQ(tb.logprobs[0].top, t.logprobs[0].top);

  InternalFinish f{"stop", "tail", "<|im_end|>", Usage{12, 4, 8}};
  InternalFinish fb;
  ASSERT_FALSE(parse_internal_finish(data_of(internal_finish_event(f), "finish"), fb));
  EXPECT_EQ(fb.finish_reason, "stop");
  EXPECT_EQ(fb.text, "tail");
  EXPECT_EQ(fb.matched_stop, "<|im_end|>");
  EXPECT_EQ(fb.usage.prompt_tokens, 12);
  EXPECT_EQ(fb.usage.completion_tokens, 4);
  EXPECT_EQ(fb.usage.cached_tokens, 8);

  InternalPreempted pb;
  ASSERT_FALSE(parse_internal_preempted(data_of(internal_preempted_event({60123}), "preempted"), pb));
  EXPECT_EQ(pb.recompute_tokens, 60123);
  EXPECT_TRUE(parse_internal_preempted(R"({"recompute_tokens":-1})", pb).has_value());
  EXPECT_TRUE(parse_internal_preempted("not json", pb).has_value());
}

TEST(InternalApi, KvEventsCarryFull64BitHashes) {
  KvEventWire e{7, true, {0, 1, (uint64_t{1} << 53) + 1, 18446744073709551615ull}};
  const std::string sse = kv_event_data(e);
  EXPECT_EQ(
      sse,
      "data: "
      "{\"seq\":7,\"type\":\"stored\",\"hashes\":[0,1,9007199254740993,18446744073709551615]}\n\n");
  KvEventWire back;
  ASSERT_FALSE(parse_kv_event(sse.substr(6, sse.size() - 8), back));
  EXPECT_EQ(back.seq, 7u);
  EXPECT_TRUE(back.stored);
  EXPECT_EQ(back.hashes, e.hashes);
  EXPECT_TRUE(parse_kv_event(R"({"seq":1,"type":"gone","hashes":[]})", back));
  EXPECT_TRUE(parse_kv_event(R"({"seq":1,"type":"removed","hashes":[-1]})", back));
}

}  // namespace
}  // namespace sy
