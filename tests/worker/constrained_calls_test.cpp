// Constrained decoding on a served model with random weights (the Qwen3 fixture: the real
// Qwen3 tokenizer and template, so 151,669 tokens and Hermes calls): tool_choice
// "required" gives a schema-valid call every time, over seeds, temperatures, streaming
// and parallel_tool_calls; a named function is always the one called; "none" calls
// nothing; "auto" never shows tag text as content; a schema the mask cannot enforce is a
// 400; seeded and greedy requests repeat token for token; Llama 3.1's JSON format on the
// Llama 3 fixture. Arguments are checked by tests/common/json_schema_check.h, which
// shares no code with the engine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/chat_template.h"
#include "common/constrain/tool_constraint.h"
#include "common/json_schema_check.h"
#include "common/model_source.h"
#include "common/protocol/prompt.h"
#include "common/tokenizer/tokenizer.h"
#include "fixture_edit.h"
#include "fixture_util.h"
#include "chat_client.h"
#include "worker_process.h"

namespace sy::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const json kWeather = json::parse(R"({"type": "object", "properties": {
  "city": {"type": "string", "maxLength": 8},
  "days": {"type": "integer"},
  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
  "hourly": {"type": "boolean"},
  "ratio": {"type": ["number", "null"]},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
  "where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]}},
  "required": ["city", "unit"]})");
const json kTime = json::parse(R"({"type": "object", "properties": {"zone": {"type": "string", "maxLength": 6}}, "required": ["zone"]})");

json tools() {
  return json::array({{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", kWeather}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", kTime}}}}});
}

class ConstrainedCallsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<std::string> args = {"--model", fixture_path("qwen3-tiny"), "--kv-blocks", "256", "--served-model-name", "tiny",
                                     "--chat-template-kwargs", R"({"enable_thinking": false})"};
    // SY_TEST_WORKER_DEVICE=cuda runs the same checks on the GPU backend (masked rows take
    // its host-sampling path).
    // On a GPU the resume check needs the batch-invariant numerics (docs/NUMERICS.md),
    // which the CPU backend has by default.
    if (const char* d = std::getenv("SY_TEST_WORKER_DEVICE")) args.insert(args.end(), {"--device", d, "--numerics", "deterministic"});
    worker_ = start_ready_worker(args).release();
    ASSERT_NE(worker_->port(), 0);
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(worker_->terminate(), 0);
    delete worker_;
  }
  static uint16_t port() { return worker_->port(); }
  static WorkerProcess* worker_;
};
WorkerProcess* ConstrainedCallsTest::worker_ = nullptr;

json user() { return json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}}); }

// Every call names an offered function and its arguments parse and match its schema;
// "" when so, else what is wrong.
std::string check_calls(const ChatReply& r, const std::string& only = "") {
  if (r.status != 200) return "status " + std::to_string(r.status) + ": " + r.error;
  if (r.finish_reason != "tool_calls") return "finish_reason " + r.finish_reason;
  if (!r.message.contains("tool_calls") || r.message["tool_calls"].empty()) return "no tool call";
  if (r.message["content"].is_string() && !r.message["content"].get<std::string>().empty())
    return "content " + r.message["content"].dump();
  for (const json& tc : r.message["tool_calls"]) {
    const std::string name = tc["function"]["name"];
    if (!only.empty() && name != only) return "called " + name;
    if (name != "get_weather" && name != "get_time") return "unknown function " + name;
    const json args = json::parse(tc["function"]["arguments"].get<std::string>(), nullptr, false);
    if (args.is_discarded()) return "arguments are not JSON: " + tc["function"]["arguments"].get<std::string>();
    const std::string why = schema_violation(args, name == "get_weather" ? kWeather : kTime);
    if (!why.empty()) return why + " in " + args.dump();
  }
  return "";
}

TEST_F(ConstrainedCallsTest, RequiredGivesSchemaValidCallsEveryTime) {
  const float temperatures[] = {0.0f, 0.6f, 1.0f, 1.5f};
  int valid = 0, calls = 0;
  for (int i = 0; i < 100; ++i) {
    const bool parallel = i % 4 == 3;
    json body = {{"messages", user()},     {"tools", tools()},       {"tool_choice", "required"},
                 {"max_tokens", parallel ? 2000 : 600}, {"temperature", temperatures[i % 4]}, {"seed", 1000 + i},
                 {"parallel_tool_calls", parallel}};
    const ChatReply r = chat(port(), body, i % 2 == 1);
    const std::string why = check_calls(r);
    EXPECT_EQ(why, "") << "request " << i << ": " << r.message.dump();
    if (why.empty()) {
      ++valid;
      calls += static_cast<int>(r.message["tool_calls"].size());
      if (!parallel) {
        EXPECT_EQ(r.message["tool_calls"].size(), 1u) << r.message;
      }
    }
  }
  EXPECT_EQ(valid, 100);
  std::printf("required: %d/100 schema-valid replies, %d calls\n", valid, calls);
}

TEST_F(ConstrainedCallsTest, NamedChoiceAlwaysCallsThatFunction) {
  for (int i = 0; i < 12; ++i) {
    const std::string name = i % 2 ? "get_time" : "get_weather";
    json body = {{"messages", user()}, {"tools", tools()}, {"max_tokens", 600}, {"temperature", 1.0}, {"seed", i},
                 {"tool_choice", {{"type", "function"}, {"function", {{"name", name}}}}}};
    const ChatReply r = chat(port(), body, i % 3 == 0);
    EXPECT_EQ(check_calls(r, name), "") << r.message;
    if (r.status == 200) {
      EXPECT_EQ(r.message["tool_calls"].size(), 1u);
    }
  }
}

TEST_F(ConstrainedCallsTest, NoneCallsNothingAndAutoLeaksNoMarkup) {
  for (int i = 0; i < 8; ++i)
    for (const char* choice : {"none", "auto"}) {
      json body = {{"messages", user()}, {"tools", tools()}, {"tool_choice", choice}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", i}};
      const ChatReply r = chat(port(), body, i % 2 == 0);
      ASSERT_EQ(r.status, 200) << r.error;
      const std::string content = r.message["content"].is_string() ? r.message["content"].get<std::string>() : "";
      EXPECT_EQ(content.find("tool_call>"), std::string::npos) << content;
      for (const auto& d : r.content_deltas) EXPECT_EQ(d.find("<tool_call"), std::string::npos) << d;
      if (std::string(choice) == "none") {
        EXPECT_TRUE(!r.message.contains("tool_calls") || r.message["tool_calls"].empty()) << r.message;
        EXPECT_NE(r.finish_reason, "tool_calls");
      }
    }
}

TEST_F(ConstrainedCallsTest, SeededAndGreedyRequestsRepeat) {
  for (float t : {0.0f, 1.0f}) {
    json body = {{"messages", user()}, {"tools", tools()}, {"tool_choice", "required"}, {"max_tokens", 600}, {"temperature", t}, {"seed", 42}};
    const ChatReply a = chat(port(), body, false), b = chat(port(), body, true);
    ASSERT_EQ(check_calls(a), "");
    EXPECT_EQ(a.message["tool_calls"][0]["function"], b.message["tool_calls"][0]["function"]);
  }
}

// The gateway's continuation of a constrained stream on another replica: the internal API
// with the spec and the ids already sent continues token for token (the grammar state is
// replayed through the resume ids).
TEST_F(ConstrainedCallsTest, InternalResumeContinuesTokenForToken) {
  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(json{{"messages", user()}, {"tools", tools()}, {"tool_choice", "required"},
                                       {"chat_template_kwargs", {{"enable_thinking", false}}}}.dump(), req));
  auto src = ModelSource::open(fixture_path("qwen3-tiny"));
  auto tok = Tokenizer::from_model(*src);
  const ChatTemplate tmpl = ChatTemplate::from_model(*src, tok->bos_token(), tok->eos_token());
  std::vector<int32_t> prompt;
  ChatOutputSpec output;
  ASSERT_FALSE(prompt_ids_for(req, *tok, &tmpl, prompt, &output));
  Json spec;
  ASSERT_FALSE(constrain::tool_constraint_spec(req, output, spec));
  auto generate = [&](const std::string& id, const std::vector<int32_t>& resume, std::string& finish) {
    const json body = {{"request_id", id}, {"prompt_ids", prompt}, {"resume_ids", resume}, {"max_tokens", 600},
                       {"temperature", 1.0}, {"seed", 9}, {"constraint", json::parse(spec.dump())}};
    SseStream s(port(), "POST", "/internal/generate", body.dump());
    EXPECT_EQ(s.status(), 200);
    std::vector<int32_t> ids;
    for (const auto& ev : s.rest()) {
      const json d = json::parse(ev.data);
      if (ev.type == "tokens") ids.insert(ids.end(), d["ids"].begin(), d["ids"].end());
      if (ev.type == "finish") finish = d["finish_reason"];
    }
    return ids;
  };
  std::string finish;
  const std::vector<int32_t> whole = generate("whole", {}, finish);
  ASSERT_EQ(finish, "stop");
  ASSERT_GT(whole.size(), 8u);
  const std::string text = tok->decode(whole);
  EXPECT_EQ(text.rfind("<tool_call>\n{\"name\": \"", 0), 0u) << text;
  for (size_t k : {size_t{1}, size_t{5}, whole.size() / 2, whole.size() - 1}) {
    const std::vector<int32_t> head(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(k));
    const std::vector<int32_t> rest = generate("resume-" + std::to_string(k), head, finish);
    EXPECT_EQ(rest, std::vector<int32_t>(whole.begin() + static_cast<ptrdiff_t>(k), whole.end())) << "resumed after " << k;
    EXPECT_EQ(finish, "stop");
  }
  // Resume ids the grammar refuses are an error, not a silent unconstrained run.
  const json bad = {{"request_id", "bad"}, {"prompt_ids", prompt}, {"resume_ids", tok->encode("hello", false)},
                    {"max_tokens", 8}, {"constraint", json::parse(spec.dump())}};
  SseStream s(port(), "POST", "/internal/generate", bad.dump());
  bool error = false;
  for (const auto& ev : s.rest()) error = error || ev.type == "error";
  EXPECT_TRUE(error);
}

TEST_F(ConstrainedCallsTest, UnsupportedSchemaIs400) {
  json t = tools();
  t[1]["function"]["parameters"]["properties"]["zone"]["pattern"] = "^[A-Z]+$";
  const HttpResult h = post_json(port(), "/v1/chat/completions", {{"messages", user()}, {"tools", t}, {"tool_choice", "required"}});
  EXPECT_EQ(h.status, 400) << h.body;
  EXPECT_EQ(h.json()["error"]["param"], "tools");
  EXPECT_NE(h.body.find("'pattern' is not supported"), std::string::npos) << h.body;
  // Without constraint (auto) the same schema is the model's to read.
  EXPECT_EQ(post_json(port(), "/v1/chat/completions", {{"messages", user()}, {"tools", t}, {"max_tokens", 2}}).status, 200);
}

// Llama 3.1's tool prompt, cut to what decides the format: tools as JSON, calls answered
// as {"name": …, "parameters": …} (the fixture's own template renders no tools).
constexpr const char* kLlama31Template = R"({{- bos_token }}{%- if tools %}<|start_header_id|>system<|end_header_id|>

Given the following functions, respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.

{% for t in tools %}{{ t | tojson }}

{% endfor %}<|eot_id|>{%- endif %}{%- for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>

{{ m.content }}<|eot_id|>{%- endfor %}{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %})";

// Llama 3.1's JSON calls on the Llama 3 fixture (128,256 tokens) given that template.
TEST(ConstrainedCallsLlama, RequiredGivesSchemaValidJsonCalls) {
  const std::string model = edited_fixture("llama3-tiny-bf16.gguf", "llama31-tools.gguf", [](const gguf::KeyValue& kv, gguf::Writer& w) {
    if (kv.key != "tokenizer.chat_template") return false;
    w.set_string(kv.key, kLlama31Template);
    return true;
  }, keep_tensor);
  std::vector<std::string> args = {"--model", model, "--kv-blocks", "256"};
  if (const char* d = std::getenv("SY_TEST_WORKER_DEVICE")) args.insert(args.end(), {"--device", d});
  WorkerProcess w(args);
  ASSERT_NE(w.port(), 0);
  for (int i = 0; i < 600 && http_request(w.port(), "GET", "/ready").status != 200; ++i) std::this_thread::sleep_for(50ms);
  int valid = 0;
  for (int i = 0; i < 20; ++i) {
    json body = {{"messages", user()}, {"tools", tools()}, {"tool_choice", "required"}, {"max_tokens", 600},
                 {"temperature", i % 2 ? 1.0 : 0.0}, {"seed", i}, {"parallel_tool_calls", false}};
    const ChatReply r = chat(w.port(), body, i % 3 == 0);
    const std::string why = check_calls(r);
    EXPECT_EQ(why, "") << "request " << i << ": " << r.message.dump();
    valid += why.empty();
  }
  EXPECT_EQ(valid, 20);
  EXPECT_EQ(w.terminate(), 0);
  std::remove(model.c_str());
}

}  // namespace
}  // namespace sy::testing
