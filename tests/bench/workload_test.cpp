// Workload files, generated prompts, request bodies and the bench's flags.
#include "bench/loadgen/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/loadgen/options.h"
#include "common/cli/args.h"

namespace sy::bench {
namespace {

using nlohmann::json;

class WorkloadFile : public ::testing::Test {
 protected:
  std::string write(const std::string& content) {
    path_ = std::filesystem::temp_directory_path() /
            ("sy_workload_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
    std::ofstream(path_) << content;
    return path_.string();
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::filesystem::path path_;
};

TEST_F(WorkloadFile, PromptsAndMessages) {
  const Workload w =
      Workload::from_file(write("{\"prompt\": \"Hello\", \"max_tokens\": 5}\n"
                                "\n"
                                "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}]}\r\n"));
  ASSERT_EQ(w.size(), 2u);
  const WorkItem a = w.item(0);
  EXPECT_EQ(a.endpoint, Endpoint::kCompletions);
  EXPECT_EQ(a.input, "Hello");
  EXPECT_EQ(a.max_tokens, 5);
  const WorkItem b = w.item(1);
  EXPECT_EQ(b.endpoint, Endpoint::kChat);
  EXPECT_FALSE(b.max_tokens.has_value());
  EXPECT_EQ(w.item(2).input, "Hello");  // request i uses entry i mod size
}

TEST_F(WorkloadFile, BadLinesNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"prompt\": \"a\"}\nnot json\n", "line 2: not a JSON object"},
      {"{\"prompt\": \"a\", \"max_token\": 3}\n", "unknown key \"max_token\""},
      {"{\"prompt\": \"a\", \"messages\": []}\n", "exactly one of"},
      {"{\"max_tokens\": 3}\n", "exactly one of"},
      {"{\"messages\": []}\n", "non-empty array"},
      {"{\"prompt\": \"a\", \"max_tokens\": 0}\n", "positive integer"},
      {"{\"prompt\": \"a\", \"max_tokens\": \"4\"}\n", "positive integer"},
      {"\n\n", "no requests"},
  };
  for (const auto& [content, message] : bad) {
    try {
      Workload::from_file(write(content));
      ADD_FAILURE() << "accepted: " << content;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(Workload::from_file("/nonexistent/workload.jsonl"), std::runtime_error);
}

TEST(GeneratedWorkload, UniqueEnglishPromptsOfAboutTheLength) {
  const Workload w = Workload::generated(500, Endpoint::kCompletions);
  const std::string a = w.item(0).input.get<std::string>();
  const std::string b = w.item(1).input.get<std::string>();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("Request 0. ", 0), 0u);
  EXPECT_EQ(b.rfind("Request 1. ", 0), 0u);
  EXPECT_GE(a.size(), 2375u);  // 4.75 characters a token
  EXPECT_LT(a.size(), 2475u);
  EXPECT_NE(a.back(), ' ');
  const Workload chat = Workload::generated(10, Endpoint::kChat);
  const WorkItem c = chat.item(3);
  EXPECT_EQ(c.endpoint, Endpoint::kChat);
  EXPECT_EQ(c.input[0]["role"], "user");
  EXPECT_EQ(c.input[0]["content"].get<std::string>().rfind("Request 3. ", 0), 0u);
}

TEST(RequestBody, StreamsWithUsageAndExactLength) {
  RequestTemplate t;
  t.model = "m";
  t.max_tokens = 16;
  t.temperature = 0.5;
  t.priority = json("interactive");
  t.extra = {{"top_p", 0.9}, {"max_tokens", 1}, {"stream", false}, {"model", "other"}};
  WorkItem item;
  item.input = "Hello";
  const json body = json::parse(request_body(item, t));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["prompt"], "Hello");
  EXPECT_EQ(body["max_tokens"], 16);  // --extra-body adds fields, never overrides these
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["priority"], "interactive");
  EXPECT_EQ(body["top_p"], 0.9);

  item.endpoint = Endpoint::kChat;
  item.input = json::array({{{"role", "user"}, {"content", "Hi"}}});
  item.max_tokens = 3;
  const json chat = json::parse(request_body(item, t));
  EXPECT_EQ(chat["messages"][0]["content"], "Hi");
  EXPECT_FALSE(chat.contains("prompt"));
  EXPECT_EQ(chat["max_tokens"], 3);
  EXPECT_EQ(requested_max_tokens(item, t), 3);
  EXPECT_STREQ(endpoint_path(Endpoint::kChat), "/v1/chat/completions");
}

std::vector<std::string> args(std::initializer_list<const char*> a) {
  return {a.begin(), a.end()};
}

TEST(BenchOptions, LevelsAndDefaults) {
  const BenchOptions closed = parse_options(args({"--concurrency", "1,4,16", "--warmup", "2"}));
  const std::vector<LevelSpec> levels = closed.levels();
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].concurrency, 1);
  EXPECT_EQ(levels[0].num_requests, 8);   // at least 8
  EXPECT_EQ(levels[2].num_requests, 64);  // 4 per user
  EXPECT_EQ(levels[2].warmup, 2);

  const BenchOptions open = parse_options(args({"--rate", "0.5,2", "--duration", "30"}));
  ASSERT_EQ(open.levels().size(), 2u);
  EXPECT_EQ(open.levels()[0].mode, LevelSpec::Mode::kOpen);
  EXPECT_DOUBLE_EQ(open.levels()[1].rate, 2);
  EXPECT_EQ(open.levels()[1].num_requests, 0);  // bounded by the duration
  EXPECT_DOUBLE_EQ(open.levels()[1].duration_s, 30);

  const BenchOptions p =
      parse_options(args({"--priority", "-3", "--timeout", "1.5", "--no-keep-alive"}));
  EXPECT_EQ(*p.request.priority, -3);
  EXPECT_EQ(p.client.timeout.count(), 1500);
  EXPECT_FALSE(p.client.keep_alive);
  EXPECT_EQ(*parse_options(args({"--priority", "batch"})).request.priority, "batch");
}

TEST(BenchOptions, BadFlags) {
  for (auto bad : std::vector<std::vector<std::string>>{
           args({"--concurrency", "0"}), args({"--concurrency", "1,x"}), args({"--rate", "-1"}),
           args({"--rate", "1", "--concurrency", "2"}), args({"--max-tokens", "0"}),
           args({"--endpoint", "embeddings"}),
           args({"--workload", "w.jsonl", "--prompt-tokens", "5"}), args({"--extra-body", "[1]"}),
           args({"--timeout", "0"}), args({"--bogus"})})
    EXPECT_THROW(parse_options(bad), cli::UsageError) << bad[0];
}

}  // namespace
}  // namespace sy::bench
