// Tool calls and reasoning on a real worker (the Qwen3 fixture, random weights): the
// OpenAI replay with "content": null renders (it was a 400), bad tool input is a 400
// naming the field, `auto` never shows tag text as content and `none` gives no calls,
// streamed or not; and `switchyard-worker chat --tools` prints the prompt the server
// renders.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/chat_template.h"
#include "common/model_source.h"
#include "common/protocol/openai.h"
#include "common/tokenizer/tokenizer.h"
#include "fixture_util.h"
#include "chat_client.h"
#include "worker_process.h"

namespace sy::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");

const json kReplay = json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"}])");

class ToolCallsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    worker_ = start_ready_worker({"--model", fixture_path("qwen3-tiny"), "--kv-blocks", "128", "--served-model-name", "tiny",
                                  "--chat-template-kwargs", R"({"enable_thinking": false})"})
                  .release();
    ASSERT_NE(worker_->port(), 0);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(worker_->terminate(), 0);
    delete worker_;
  }
  static uint16_t port() { return worker_->port(); }
  static WorkerProcess* worker_;
};
WorkerProcess* ToolCallsServerTest::worker_ = nullptr;

TEST_F(ToolCallsServerTest, ReplayWithNullContentIsServed) {
  for (bool stream : {false, true}) {
    const ChatReply r = chat(port(), {{"messages", kReplay}, {"tools", kTools}, {"max_tokens", 8}}, stream);
    EXPECT_EQ(r.status, 200) << r.message;
    EXPECT_FALSE(r.finish_reason.empty());
  }
}

// The server's default (enable_thinking false: the prompt ends with an empty think
// block) applies unless the request sets the variable itself.
TEST_F(ToolCallsServerTest, ServerDefaultTemplateKwargsYieldToTheRequest) {
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  const HttpResult by_default = post_json(port(), "/v1/chat/completions", {{"messages", user}, {"max_tokens", 1}});
  const HttpResult thinking = post_json(port(), "/v1/chat/completions",
                                        {{"messages", user}, {"max_tokens", 1}, {"chat_template_kwargs", {{"enable_thinking", true}}}});
  ASSERT_EQ(by_default.status, 200) << by_default.body;
  ASSERT_EQ(thinking.status, 200) << thinking.body;
  // "<think>\n\n</think>\n\n" is 4 tokens of the Qwen3 vocabulary.
  EXPECT_EQ(by_default.json()["usage"]["prompt_tokens"].get<int>(), thinking.json()["usage"]["prompt_tokens"].get<int>() + 4);
}

TEST_F(ToolCallsServerTest, BadToolInputIs400) {
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  struct Bad {
    json body;
    std::string param;
  };
  const std::vector<Bad> cases = {
      {{{"messages", user}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}, "tool_choice"},
      {{{"messages", user}, {"tools", json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": []}}])")}}, "tools"},
      {{{"messages", json::parse(R"([{"role": "user", "content": "x"}, {"role": "tool", "content": "1"}])")}}, "messages"},
  };
  for (const Bad& b : cases) {
    const HttpResult h = post_json(port(), "/v1/chat/completions", b.body);
    EXPECT_EQ(h.status, 400) << h.body;
    EXPECT_EQ(h.json()["error"]["param"], b.param) << h.body;
  }
}

// Random weights write random tokens: whatever they are, no tag text reaches content, a
// call that is announced is well-formed, and "none" announces none.
TEST_F(ToolCallsServerTest, AutoNeverLeaksMarkupAndNoneCallsNothing) {
  int replies = 0;
  for (int seed = 0; seed < 6; ++seed) {
    for (const char* choice : {"auto", "none"}) {
      const json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
                         {"tools", kTools},
                         {"tool_choice", choice},
                         {"max_tokens", 24},
                         {"temperature", 1.0},
                         {"seed", seed}};
      for (bool stream : {false, true}) {
        const ChatReply r = chat(port(), body, stream);
        ASSERT_EQ(r.status, 200) << r.message;
        ++replies;
        const std::string content = r.message["content"].is_string() ? r.message["content"].get<std::string>() : "";
        if (std::string(choice) == "auto") {
          EXPECT_EQ(content.find("tool_call>"), std::string::npos) << content;
          for (const auto& d : r.content_deltas) EXPECT_EQ(d.find("<tool_call"), std::string::npos) << d;
        } else {
          EXPECT_TRUE(!r.message.contains("tool_calls") || r.message["tool_calls"].empty()) << r.message;
          EXPECT_NE(r.finish_reason, "tool_calls");
        }
        if (r.message.contains("tool_calls"))
          for (const auto& tc : r.message["tool_calls"]) {
            EXPECT_EQ(tc["type"], "function");
            EXPECT_FALSE(tc["function"]["name"].get<std::string>().empty());
          }
      }
    }
  }
  EXPECT_EQ(replies, 24);
}

// `chat --tools --template-kwargs` prints exactly what the template renders for the same
// request after the server's parsing (arguments as objects, null content as "").
TEST(WorkerChatCommand, PrintsTheRenderedToolConversation) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("sy_chat_cmd_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "messages.json") << json{{"messages", kReplay}}.dump();
  std::ofstream(dir / "tools.json") << kTools.dump();
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-worker chat --model " + fixture_path("qwen3-tiny") +
                          " --messages " + (dir / "messages.json").string() + " --tools " + (dir / "tools.json").string() +
                          " --template-kwargs '{\"enable_thinking\": false}' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p ? ::pclose(p) : -1;
  fs::remove_all(dir);
  ASSERT_EQ(status, 0) << out;

  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(json{{"messages", kReplay}, {"tools", kTools}, {"chat_template_kwargs", {{"enable_thinking", false}}}}.dump(), req));
  auto src = ModelSource::open(fixture_path("qwen3-tiny"));
  auto tok = Tokenizer::from_model(*src);
  const ChatTemplate tmpl = ChatTemplate::from_model(*src, tok->bos_token(), tok->eos_token());
  EXPECT_EQ(out, tmpl.render(req.messages, true, req.template_kwargs));
  // The tools file's key order is kept (nlohmann::json wrote it sorted).
  EXPECT_NE(out.find("<tools>\n{\"function\": {\"description\": \"Weather\", \"name\": \"get_weather\""), std::string::npos) << out;
  EXPECT_NE(out.find("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"), std::string::npos) << out;
  EXPECT_TRUE(out.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << out;
}

}  // namespace
}  // namespace sy::testing
