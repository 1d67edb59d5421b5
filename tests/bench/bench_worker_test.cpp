// switchyard-bench against a real worker: `switchyard-worker serve` on the tiny Qwen3
// fixture on a port the OS picks, the bench run as a user runs it, its JSON report
// checked: every request ok and exactly max_tokens long, and server errors reported.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../worker/worker_process.h"

namespace sy {
namespace {

using nlohmann::json;

struct BenchRun {
  int status = -1;
  std::string out;
};

BenchRun run_bench(const std::string& args) {
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-bench " + args + " 2>/dev/null";
  BenchRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Single-quotes `s` for the shell.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class BenchAgainstWorker : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    worker_ = new testing::WorkerProcess({"--model",
                                          std::string(SY_FIXTURES_DIR) + "/qwen3-tiny-bf16.gguf",
                                          "--kv-blocks", "256", "--max-num-seqs", "8"});
    if (worker_->port() == 0) return;
    // Serve prints its URL once bound; requests are for after the warm-up step.
    for (int i = 0;
         i < 600 && testing::http_request(worker_->port(), "GET", "/ready").status != 200; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    url_ = "http://127.0.0.1:" + std::to_string(worker_->port());
  }
  static void TearDownTestSuite() {
    if (worker_->port() != 0) {
      EXPECT_EQ(worker_->terminate(), 0);
    }
    delete worker_;
    worker_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(url_.empty()) << "switchyard-worker serve did not print its URL";
  }

  static testing::WorkerProcess* worker_;
  static std::string url_;
};

testing::WorkerProcess* BenchAgainstWorker::worker_ = nullptr;
std::string BenchAgainstWorker::url_;

// Checks the one level of a report: every request ok and exactly max_tokens long.
void expect_all_ok(const json& level, int64_t requests, int64_t max_tokens) {
  EXPECT_EQ(level["requests"], requests);
  EXPECT_EQ(level["ok"], requests);
  EXPECT_EQ(level["errors"], 0) << level["error_samples"].dump();
  EXPECT_EQ(level["warmup_errors"], 0);
  EXPECT_EQ(level["valid"], true);
  EXPECT_EQ(level["output_tokens"], requests * max_tokens);
  EXPECT_EQ(level["ttft_ms"]["count"], requests);
  EXPECT_GT(level["ttft_ms"]["p50"].get<double>(), 0);
  EXPECT_GE(level["ttft_ms"]["p99"].get<double>(), level["ttft_ms"]["p50"].get<double>());
  // One ITL sample per token after the first of each request.
  EXPECT_EQ(level["itl_ms"]["count"].get<int64_t>() + level["unattributed_tokens"].get<int64_t>(),
            requests * (max_tokens - 1));
  EXPECT_GE(level["e2e_ms"]["p50"].get<double>(), level["ttft_ms"]["p50"].get<double>());
  EXPECT_GT(level["per_user_output_tok_s"].get<double>(), 0);
  EXPECT_GT(level["aggregate_output_tok_s"].get<double>(), 0);
  EXPECT_GT(level["prompt_tokens_mean"].get<double>(), 0);
}

TEST_F(BenchAgainstWorker, CompletionsAtConcurrencyTwo) {
  const BenchRun r = run_bench(
      "--url " + url_ +
      " --concurrency 2 --num-requests 4 --warmup 1 --prompt-tokens 40 --max-tokens 8 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["valid"], true);
  ASSERT_EQ(report["levels"].size(), 1u);
  const json& level = report["levels"][0];
  EXPECT_EQ(level["mode"], "closed");
  EXPECT_EQ(level["concurrency"], 2);
  expect_all_ok(level, 4, 8);
  EXPECT_EQ(level["warmup_requests"], 1);
  // Generated prompts of ~40 tokens (plus a BOS, if the model adds one).
  EXPECT_NEAR(level["prompt_tokens_mean"].get<double>(), 40, 8);
}

TEST_F(BenchAgainstWorker, ChatWorkloadFileInOpenLoop) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("sy_bench_e2e_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path)
      << R"({"messages": [{"role": "user", "content": "Name three rivers."}], "max_tokens": 6})"
         "\n"
      << R"({"prompt": "The capital of France is", "max_tokens": 6})"
         "\n";
  const BenchRun r = run_bench("--url " + url_ + " --rate 20 --num-requests 4 --workload " +
                               path.string() + " --json");
  std::filesystem::remove(path);
  ASSERT_EQ(r.status, 0) << r.out;
  const json level = json::parse(r.out)["levels"][0];
  EXPECT_EQ(level["mode"], "open");
  expect_all_ok(level, 4, 6);
}

TEST_F(BenchAgainstWorker, ServerErrorsAreCountedAndFailTheRun) {
  // An unknown model is the server's 404; the bench must say so and exit 2.
  const BenchRun r =
      run_bench("--url " + url_ +
                " --model no-such-model --concurrency 2 --num-requests 3 --max-tokens 4 --json");
  EXPECT_EQ(r.status, 2);
  const json level = json::parse(r.out)["levels"][0];
  EXPECT_EQ(level["ok"], 0);
  EXPECT_EQ(level["errors"], 3);
  EXPECT_EQ(level["errors_by_kind"]["http_status"], 3);
  EXPECT_EQ(level["valid"], false);
}

TEST_F(BenchAgainstWorker, ShortResponsesFailValidation) {
  // A stop string makes the server end a response before max_tokens, as a model that
  // stops early would; the bench must refuse to count it. The stop string is the last
  // word of this prompt's greedy output, which the tiny model repeats, so it first
  // matches well before the end.
  const std::string prompt = "The capital of France is";
  const testing::HttpResult solo = testing::post_json(
      worker_->port(), "/v1/completions",
      {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_EQ(solo.status, 200) << solo.body;
  const std::string text = solo.json()["choices"][0]["text"].get<std::string>();
  const std::string word = text.substr(text.find_last_of(' ') + 1);
  ASSERT_FALSE(word.empty()) << text;
  ASSERT_LT(text.find(word) + word.size(), text.size())
      << "the stop word must first occur before the end: " << text;

  const auto path = std::filesystem::temp_directory_path() /
                    ("sy_bench_stop_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(path) << json{{"prompt", prompt}, {"max_tokens", 8}}.dump() << "\n";
  const std::string extra = json{{"stop", {word}}}.dump();
  const BenchRun r = run_bench("--url " + url_ + " --concurrency 1 --num-requests 2 --workload " +
                               path.string() + " --extra-body " + quoted(extra) + " --json");
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 2) << r.out;
  const json level = json::parse(r.out)["levels"][0];
  EXPECT_EQ(level["ok"], 0);
  EXPECT_EQ(level["errors_by_kind"]["validation"], 2) << level["error_samples"].dump();
  EXPECT_NE(level["error_samples"][0].get<std::string>().find("requested max_tokens 8"),
            std::string::npos);
  EXPECT_EQ(json::parse(r.out)["valid"], false);
}

}  // namespace
}  // namespace sy
