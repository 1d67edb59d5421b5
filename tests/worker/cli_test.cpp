// switchyard-worker as a user runs it: each subcommand in a real process, its output
// checked against the fixtures' goldens.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/gguf.h"
#include "common/tokenizer/tokenizer.h"
#include "fixture_edit.h"

namespace sy {
namespace {

struct RunResult {
  int status = -1;
  std::string out;
};

// Runs the worker with `args` (already shell-quoted), capturing stdout.
RunResult run_worker(const std::string& args) {
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-worker " + args + " 2>/dev/null";
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Single-quotes a string for the shell.
std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out.append("'\\''");
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(ids[i]));
  }
  return s;
}

struct Model {
  std::string fixture, path;
};
const std::vector<Model> kModels = {{"qwen3-tiny", "qwen3-tiny-bf16.gguf"}, {"qwen3-tiny", "qwen3-tiny"},
                                     {"llama3-tiny", "llama3-tiny-bf16.gguf"}, {"qwen2-tiny", "qwen2-tiny-bf16.gguf"}};

// The golden texts that a trip through argv, the shell and the JSON output could break:
// the first one of each kind (sy_common_tests checks every golden in process, so the CLI
// test checks the transport, not the tokenizer again: 7 processes a model instead of 30).
std::vector<std::string> transport_texts(const nlohmann::json& tokenize) {
  const std::vector<std::function<bool(const std::string&)>> kinds = {
      [](const std::string& t) { return t.find('\'') != std::string::npos; },
      [](const std::string& t) { return t.find_first_of("\n\t\r") != std::string::npos; },
      [](const std::string& t) { return t.find("\xF0") != std::string::npos; },  // 4-byte UTF-8
      [](const std::string& t) { return t.find("\xE4") != std::string::npos; },  // CJK
      [](const std::string& t) { return t.find("<|") != std::string::npos; },
      [](const std::string& t) { return !t.empty() && (t.front() == ' ' || t.back() == ' '); },
      [](const std::string& t) { return t.find_first_of("&?#$`\\") != std::string::npos; },
  };
  std::vector<std::string> picked;
  for (const auto& kind : kinds) {
    for (const auto& t : tokenize) {
      const std::string text = t["text"];
      if (text.find('\0') != std::string::npos || !kind(text)) continue;  // argv cannot carry NUL
      if (std::find(picked.begin(), picked.end(), text) == picked.end()) picked.push_back(text);
      break;
    }
  }
  return picked;
}

TEST(WorkerCli, TokenizeMatchesGoldens) {
  for (const auto& m : kModels) {
    const auto golden = testing::load_golden(m.fixture);
    const auto texts = transport_texts(golden["tokenize"]);
    ASSERT_GE(texts.size(), 6u) << m.fixture;  // the goldens still have each kind
    for (const auto& t : golden["tokenize"]) {
      const std::string text = t["text"];
      if (std::find(texts.begin(), texts.end(), text) == texts.end()) continue;
      const RunResult r = run_worker("tokenize --model " + q(testing::fixture_path(m.path)) + " --text " + q(text));
      ASSERT_EQ(r.status, 0) << text;
      EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], t["ids"]) << m.path << ": " << text;
    }
  }
}

TEST(WorkerCli, ChatMatchesGoldens) {
  for (const auto& m : kModels) {
    const auto golden = testing::load_golden(m.fixture);
    for (const auto& c : golden["chat"]) {
      const std::string file = testing::temp_path("messages.json");
      std::ofstream(file) << c["messages"].dump();
      const bool no_thinking = c["kwargs"].value("enable_thinking", true) == false;
      const std::string flags = " --messages " + q(file) + (no_thinking ? " --no-thinking" : "");
      const RunResult r = run_worker("chat --model " + q(testing::fixture_path(m.path)) + flags);
      ASSERT_EQ(r.status, 0);
      EXPECT_EQ(r.out, c["text"].get<std::string>()) << m.path;
      // generate --messages runs exactly the golden chat ids.
      const RunResult g = run_worker("generate --model " + q(testing::fixture_path(m.path)) + flags + " --max-tokens 1 --json");
      std::filesystem::remove(file);
      ASSERT_EQ(g.status, 0);
      EXPECT_EQ(nlohmann::json::parse(g.out)["prompt_ids"], c["ids"]) << m.path;
    }
  }
}

TEST(WorkerCli, EvalWritesGoldenLogits) {
  const auto golden = testing::load_golden("llama3-tiny");
  const auto& p = golden["prompts"][0];
  const std::string out = testing::temp_path("logits.f32");
  const RunResult r = run_worker("eval --model " + q(testing::fixture_path("llama3-tiny-bf16.gguf")) + " --prompt-ids " +
                                 ids_arg(p["ids"].get<std::vector<int32_t>>()) + " --logits-out " + q(out));
  ASSERT_EQ(r.status, 0);
  const auto got = testing::read_f32_file(out);
  const auto want = testing::read_f32_file(testing::fixture_path(p["logits_file"]));
  std::filesystem::remove(out);
  ASSERT_EQ(got.size(), want.size());  // every position: [positions, vocab]
  float max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
  EXPECT_LE(max_diff, 2e-3f);
}

TEST(WorkerCli, GenerateMatchesGreedyGoldens) {
  for (const auto& m : kModels) {
    const auto golden = testing::load_golden(m.fixture);
    for (const auto& p : golden["prompts"]) {
      // From text: the prompt ids must be the golden's (BOS for Llama 3, none for Qwen).
      const RunResult r = run_worker("generate --model " + q(testing::fixture_path(m.path)) + " --prompt " + q(p["text"]) +
                                     " --max-tokens 32 --temperature 0 --json");
      ASSERT_EQ(r.status, 0);
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["prompt_ids"], p["ids"]) << m.path;
      EXPECT_EQ(j["token_ids"], p["greedy_32"]) << m.path << ": " << p["text"];
      EXPECT_EQ(j["text"], p["greedy_text"]) << m.path;
      // From ids: the same (the first prompt; the in-process fixture suites run every one).
      if (&p != &golden["prompts"][0]) continue;
      const RunResult r2 = run_worker("generate --model " + q(testing::fixture_path(m.path)) + " --prompt-ids " +
                                      ids_arg(p["ids"].get<std::vector<int32_t>>()) + " --max-tokens 32 --temperature 0 --json");
      EXPECT_EQ(nlohmann::json::parse(r2.out)["token_ids"], p["greedy_32"]);
    }
  }
}

TEST(WorkerCli, BadUsageIsReportedNotCrashed) {
  const std::string m = q(testing::fixture_path("qwen2-tiny-bf16.gguf"));
  EXPECT_EQ(run_worker("").status, 2);
  EXPECT_EQ(run_worker("frobnicate").status, 2);
  EXPECT_EQ(run_worker("generate --model " + m).status, 2);                                    // no prompt
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt-ids 1,x").status, 2);               // bad ids
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt hi --temperature 0.7").status, 2);  // sampling: not here
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt-ids 999999999 --max-tokens 2").status, 1);  // out of vocab
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt hi --max-tokens 5000").status, 1);  // beyond the context
  EXPECT_EQ(run_worker("eval --model /nonexistent --prompt-ids 1 --logits-out /dev/null").status, 1);
  EXPECT_EQ(run_worker("tokenize --model " + m + " --text hi --bogus").status, 2);
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt hi --max-tokens 2 --kv-dtype f8").status, 2);
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt hi --max-tokens 2 --kv-dtype f16 --pcp 2").status, 1);  // not yet
  EXPECT_EQ(run_worker("generate --model " + m + " --prompt hi --max-tokens 2 --kv-dtype f16").status, 0);
  EXPECT_EQ(run_worker("serve --model " + m + " --kv-host-gb -1").status, 2);  // before anything loads
  EXPECT_EQ(run_worker("serve --model " + m + " --kv-host-gb 1 --no-prefix-caching").status, 2);
}

// make-model: a valid GGUF in the preset's shape with the source's tokenizer and chat
// template, the same bytes for the same seed.
TEST(WorkerCli, MakeModelFromTokenizerJsonAndFromGguf) {
  const std::string from_json = testing::temp_path("made_json.gguf");
  const std::string from_gguf = testing::temp_path("made_gguf.gguf");
  const std::string again = testing::temp_path("made_again.gguf");
  ASSERT_EQ(run_worker("make-model --arch qwen3 --preset tiny --tokenizer-from " + q(testing::fixture_path("qwen3-tiny/tokenizer.json")) + " --out " + q(from_json)).status, 0);
  ASSERT_EQ(run_worker("make-model --arch llama --preset tiny --tokenizer-from " + q(testing::fixture_path("llama3-tiny-bf16.gguf")) + " --out " + q(from_gguf)).status, 0);
  ASSERT_EQ(run_worker("make-model --arch llama --preset tiny --tokenizer-from " + q(testing::fixture_path("llama3-tiny-bf16.gguf")) + " --out " + q(again)).status, 0);
  {
    std::ifstream a(from_gguf, std::ios::binary), b(again, std::ios::binary);
    EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(a), {}, std::istreambuf_iterator<char>(b))) << "same seed, different bytes";
  }
  // The made models tokenize and render like their sources.
  for (const auto& [made, fixture, source] : {std::tuple{from_json, std::string("qwen3-tiny"), std::string("qwen3-tiny")},
                                               std::tuple{from_gguf, std::string("llama3-tiny"), std::string("llama3-tiny-bf16.gguf")}}) {
    const auto golden = testing::load_golden(fixture);
    auto src = ModelSource::open(made);
    auto tok = Tokenizer::from_model(*src);
    for (const auto& t : golden["tokenize"]) EXPECT_EQ(tok->encode(t["text"].get<std::string>(), false), t["ids"].get<std::vector<int32_t>>()) << made;
    for (const auto& p : golden["prompts"]) EXPECT_EQ(tok->encode(p["text"].get<std::string>(), true), p["ids"].get<std::vector<int32_t>>()) << made;
    const std::string file = testing::temp_path("messages.json");
    std::ofstream(file) << golden["chat"][0]["messages"].dump();
    const RunResult r = run_worker("chat --model " + q(made) + " --messages " + q(file) + " --no-thinking");
    std::filesystem::remove(file);
    EXPECT_EQ(r.out, golden["chat"][0]["text"].get<std::string>()) << made;
    const RunResult g = run_worker("generate --model " + q(made) + " --prompt 'Once upon a time' --max-tokens 8 --ignore-eos --json");
    ASSERT_EQ(g.status, 0) << made;
    EXPECT_EQ(nlohmann::json::parse(g.out)["token_ids"].size(), 8u);
    (void)source;
  }
  auto f = gguf::File::open(from_json);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_NE(f->find_tensor("blk.1.attn_q_norm.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->dtype, DType::kBF16);
  for (const auto& p : {from_json, from_gguf, again}) std::filesystem::remove(p);
}

// make-model --type: the file type and each tensor's type as worker/model/file_type.h
// says (the tiny preset's rows of 64 are off the K-quants' 256 blocks: Q8_0 instead),
// --dtype as the older spelling, unknown types and both flags refused.
TEST(WorkerCli, MakeModelTypes) {
  const std::string tok = q(testing::fixture_path("llama3-tiny-bf16.gguf"));
  const std::string out = testing::temp_path("made_type.gguf");
  const std::string base = "make-model --arch llama --preset tiny --tokenizer-from " + tok + " --out " + q(out);
  ASSERT_EQ(run_worker(base + " --type q4_k_m").status, 0);
  {
    auto f = gguf::File::open(out);
    EXPECT_EQ(f->get_int("general.file_type"), 15);  // llama.cpp's MOSTLY_Q4_K_M
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->dtype, DType::kQ8_0);
    EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->dtype, DType::kF32);
  }
  ASSERT_EQ(run_worker(base + " --dtype q8_0").status, 0);
  EXPECT_EQ(gguf::File::open(out)->find_tensor("blk.1.ffn_up.weight")->dtype, DType::kQ8_0);
  EXPECT_EQ(run_worker(base + " --type q4_k").status, 2);
  EXPECT_EQ(run_worker(base + " --type q4_0 --dtype bf16").status, 2);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace sy
