// Multi-turn conversations of the load generator: histories grow with the real replies,
// system prompts are shared round-robin, conversations restart after their turns or a
// failure, and the flags that configure them.
#include "bench/loadgen/conversation.h"

#include <gtest/gtest.h>

#include "bench/loadgen/options.h"
#include "common/cli/args.h"

namespace sy::bench {
namespace {

using nlohmann::json;

RequestRecord reply(const std::string& text) {
  RequestRecord r;
  r.text = text;
  return r;
}

MultiTurnSpec spec(int64_t turns, int64_t system_prompts) {
  MultiTurnSpec s;
  s.turns = turns;
  s.system_prompts = system_prompts;
  s.system_tokens = 40;
  s.turn_tokens = 10;
  return s;
}

TEST(Conversations, EachTurnExtendsTheLastWithTheRealReply) {
  Conversations c(spec(3, 2), 1);
  const json t0 = c.next(0).input;
  ASSERT_EQ(t0.size(), 2u);
  EXPECT_EQ(t0[0]["role"], "system");
  EXPECT_EQ(t0[1]["role"], "user");
  c.finished(0, reply("first answer"));
  const WorkItem t1 = c.next(0);
  EXPECT_EQ(t1.endpoint, Endpoint::kChat);
  ASSERT_EQ(t1.input.size(), 4u);
  for (size_t i = 0; i < t0.size(); ++i) EXPECT_EQ(t1.input[i], t0[i]) << "turn 1 must extend turn 0";
  EXPECT_EQ(t1.input[2], (json{{"role", "assistant"}, {"content", "first answer"}}));
  EXPECT_EQ(t1.input[3]["role"], "user");
  EXPECT_NE(t1.input[3]["content"], t0[1]["content"]);
  c.finished(0, reply("second answer"));
  EXPECT_EQ(c.next(0).input.size(), 6u);
  c.finished(0, reply("third answer"));
  // Three turns done: a new conversation starts.
  const json fresh = c.next(0).input;
  ASSERT_EQ(fresh.size(), 2u);
  EXPECT_NE(fresh[1], t0[1]);
}

TEST(Conversations, SystemPromptsAreSharedRoundRobinAndFirstMessagesDiffer) {
  Conversations c(spec(1, 2), 4);
  std::vector<json> first;
  for (int64_t u = 0; u < 4; ++u) first.push_back(c.next(u).input);
  EXPECT_EQ(first[0][0], first[2][0]);
  EXPECT_EQ(first[1][0], first[3][0]);
  EXPECT_NE(first[0][0], first[1][0]);
  for (int64_t u = 1; u < 4; ++u) EXPECT_NE(first[u][1], first[0][1]);
  // About the requested sizes (4.75 characters a token).
  EXPECT_GE(first[0][0]["content"].get<std::string>().size(), 40u * 4);
}

TEST(Conversations, AFailedTurnStartsANewConversation) {
  Conversations c(spec(5, 1), 1);
  const json t0 = c.next(0).input;
  RequestRecord failed = reply("partial");
  failed.fail(ErrorKind::kConnect, "reset");
  c.finished(0, failed);
  const json after = c.next(0).input;
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], t0[0]);
  EXPECT_NE(after[1], t0[1]);
}

TEST(Conversations, RejectsEmptySpecs) {
  EXPECT_THROW(Conversations(spec(0, 1), 1), std::invalid_argument);
  EXPECT_THROW(Conversations(spec(2, 0), 1), std::invalid_argument);
}

TEST(MultiTurnFlags, ParseAndConflicts) {
  const BenchOptions o = parse_options({"--concurrency", "4", "--multi-turn", "3", "--system-prompts", "2",
                                        "--system-tokens", "300", "--prompt-tokens", "50"});
  EXPECT_EQ(o.multi_turn.turns, 3);
  EXPECT_EQ(o.multi_turn.system_prompts, 2);
  EXPECT_EQ(o.multi_turn.system_tokens, 300);
  EXPECT_EQ(o.multi_turn.turn_tokens, 50);
  EXPECT_EQ(o.endpoint, Endpoint::kChat);
  EXPECT_THROW(parse_options({"--rate", "2", "--multi-turn", "3"}), cli::UsageError);
  EXPECT_THROW(parse_options({"--system-prompts", "2"}), cli::UsageError);
  EXPECT_THROW(parse_options({"--multi-turn", "-1"}), cli::UsageError);
}

}  // namespace
}  // namespace sy::bench
