// The request side of tool calling: `tools`, `tool_choice`, `parallel_tool_calls` and the
// replayed conversation (assistant tool_calls with "content": null, tool messages) — each
// bad input a 400 naming the field; good ones rendered through the fixtures' own Qwen3
// and Qwen2 templates, with the output spec the response will be read by.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/chat_template.h"
#include "common/model_source.h"
#include "common/protocol/chat_tools.h"
#include "common/protocol/openai.h"
#include "common/protocol/prompt.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tool_calls/template_features.h"

namespace sy {
namespace {

const std::string kFixtures = SY_FIXTURES_DIR;

const std::string kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})";

// The standard OpenAI replay: the assistant's call with null content, then its result.
const std::string kReplay = R"([{"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"}])";

std::string body_with(const std::string& messages, const std::string& extra) {
  return R"({"model": "m", "messages": )" + messages + (extra.empty() ? "" : ", " + extra) + "}";
}
std::string user_only(const std::string& extra) {
  return body_with(R"([{"role": "user", "content": "hi"}])", extra);
}

struct Bad {
  const char* name;
  std::string body, param, contains;
};
std::ostream& operator<<(std::ostream& os, const Bad& b) { return os << b.name; }

std::vector<Bad> bad_cases() {
  return {
      {"tools_not_array", user_only(R"("tools": {})"), "tools", "'tools' must be an array"},
      {"tool_not_function", user_only(R"("tools": [{"type": "code_interpreter"}])"), "tools", "must be \"function\""},
      {"tool_without_name", user_only(R"("tools": [{"type": "function", "function": {"description": "x"}}])"), "tools",
       "'tools[0].function.name' must be a non-empty string"},
      {"schema_not_object", user_only(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "city"}}])"),
       "tools", "must be a JSON schema object, not a string"},
      {"schema_of_array", user_only(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}])"),
       "tools", "must describe an object"},
      {"duplicate_tool", user_only(R"("tools": [)" + kWeatherTool + "," + kWeatherTool + "]"), "tools", "twice"},
      {"unknown_named_choice",
       user_only(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": {"type": "function", "function": {"name": "get_time"}})"),
       "tool_choice", "\"get_time\", which is not one of 'tools'"},
      {"named_choice_without_tools", user_only(R"("tool_choice": {"type": "function", "function": {"name": "f"}})"),
       "tool_choice", "not one of 'tools'"},
      {"required_without_tools", user_only(R"("tool_choice": "required")"), "tool_choice", "needs 'tools'"},
      {"unknown_choice", user_only(R"("tools": [)" + kWeatherTool + R"(], "tool_choice": "sometimes")"), "tool_choice",
       "must be \"auto\", \"none\", \"required\" or a named function"},
      {"parallel_not_bool", user_only(R"("parallel_tool_calls": "yes")"), "parallel_tool_calls", "must be a boolean"},
      {"tool_message_without_id",
       body_with(R"([{"role": "user", "content": "x"}, {"role": "tool", "content": "21"}])", ""), "messages",
       "'messages[1].tool_call_id' is required"},
      {"tool_message_unknown_id",
       body_with(R"([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "call_9", "content": "21"}])", ""),
       "messages", "\"call_9\" answers no tool call"},
      {"arguments_not_json",
       body_with(R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{city: Paris"}}]}])",
                 ""),
       "messages", "'messages[0].tool_calls[0].function.arguments' must hold JSON text"},
      {"arguments_too_deep",
       body_with(R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": ")" +
                     std::string(100, '[') + std::string(100, ']') + R"("}}]}])",
                 ""),
       "messages", "nests deeper than 64 levels"},
      {"call_without_id",
       body_with(R"([{"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}])",
                 ""),
       "messages", "'messages[0].tool_calls[0].id' must be a non-empty string"},
  };
}

class BadToolRequest : public ::testing::TestWithParam<Bad> {};

TEST_P(BadToolRequest, Is400NamingTheField) {
  OpenAiRequest req;
  const auto e = parse_chat_request(GetParam().body, req);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, GetParam().param);
  EXPECT_NE(e->message.find(GetParam().contains), std::string::npos) << e->message;
}

INSTANTIATE_TEST_SUITE_P(ChatTools, BadToolRequest, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ChatTools, ReplayIsShapedForTheTemplate) {
  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(body_with(kReplay, R"("tools": [)" + kWeatherTool + "]"), req));
  EXPECT_EQ(req.messages[1]["content"], "");
  EXPECT_EQ(req.messages[1]["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(req.template_kwargs["tools"].size(), 1u);
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::kAuto);
  EXPECT_TRUE(req.parallel_tool_calls);
}

TEST(ChatTools, ChoicesAreRead) {
  OpenAiRequest req;
  const std::string tools = R"("tools": [)" + kWeatherTool + "]";
  ASSERT_FALSE(parse_chat_request(user_only(tools + R"(, "tool_choice": "none", "parallel_tool_calls": false)"), req));
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::kNone);
  EXPECT_FALSE(req.template_kwargs.contains("tools"));  // "none": the model is not offered them
  EXPECT_FALSE(req.parallel_tool_calls);
  ASSERT_FALSE(parse_chat_request(user_only(tools + R"(, "tool_choice": "required")"), req));
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::kRequired);
  ASSERT_FALSE(parse_chat_request(
      user_only(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})"), req));
  EXPECT_EQ(req.tool_choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(req.tool_choice.name, "get_weather");
}

TEST(ChatTools, DefaultTemplateKwargsYieldToTheRequest) {
  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(user_only(R"("chat_template_kwargs": {"enable_thinking": true})"), req));
  apply_default_template_kwargs(Json::parse(R"({"enable_thinking": false, "custom": 1})"), req);
  EXPECT_EQ(req.template_kwargs["enable_thinking"], true);
  EXPECT_EQ(req.template_kwargs["custom"], 1);
}

struct Model {
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<ChatTemplate> tmpl;
};

Model open_model(const std::string& rel) {
  auto src = ModelSource::open(kFixtures + "/" + rel);
  Model m;
  m.tok = Tokenizer::from_model(*src);
  m.tmpl = std::make_unique<ChatTemplate>(ChatTemplate::from_model(*src, m.tok->bos_token(), m.tok->eos_token()));
  return m;
}

class QwenTemplates : public ::testing::TestWithParam<const char*> {};

// The replay that was a 400 "'NoneType' is not iterable" renders, with the arguments as
// the template prints an object, and the reply will be read for <think> and <tool_call>.
TEST_P(QwenTemplates, ReplayRendersAndSetsTheOutputSpec) {
  Model m = open_model(GetParam());
  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(body_with(kReplay, R"("tools": [)" + kWeatherTool + "]"), req));
  std::vector<int32_t> ids;
  ChatOutputSpec spec;
  const auto e = prompt_ids_for(req, *m.tok, m.tmpl.get(), ids, &spec);
  ASSERT_FALSE(e) << e->message;
  const std::string text = m.tok->decode(ids);
  EXPECT_NE(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<tool_response>\n{\"temperature\": 21}\n</tool_response>"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\": \"get_weather\", \"description\": \"Weather\""), std::string::npos) << text;
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kHermes);
  EXPECT_TRUE(spec.reasoning);
  EXPECT_FALSE(spec.starts_in_reasoning);

  ASSERT_FALSE(parse_chat_request(
      body_with(kReplay, R"("tools": [)" + kWeatherTool + R"(], "chat_template_kwargs": {"enable_thinking": false}, "tool_choice": "none")"),
      req));
  ASSERT_FALSE(prompt_ids_for(req, *m.tok, m.tmpl.get(), ids, &spec));
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kNone);
  EXPECT_FALSE(spec.reasoning);
  EXPECT_EQ(m.tok->decode(ids).find("<tools>"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(ChatTools, QwenTemplates, ::testing::Values("qwen3-tiny", "qwen2-tiny-bf16.gguf"));

TEST(ChatTools, ToolsForATemplateWithoutThemAre400) {
  Model m = open_model("llama3-tiny-bf16.gguf");
  OpenAiRequest req;
  ASSERT_FALSE(parse_chat_request(user_only(R"("tools": [)" + kWeatherTool + "]"), req));
  std::vector<int32_t> ids;
  const auto e = prompt_ids_for(req, *m.tok, m.tmpl.get(), ids);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "tools");
  // Without tools the same template renders as before.
  ASSERT_FALSE(parse_chat_request(user_only(""), req));
  EXPECT_FALSE(prompt_ids_for(req, *m.tok, m.tmpl.get(), ids));
}

TEST(ChatTools, TemplateFeaturesByMarkers) {
  Model qwen = open_model("qwen3-tiny");
  const TemplateFeatures q = template_features(qwen.tmpl->source());
  EXPECT_TRUE(q.takes_tools);
  EXPECT_TRUE(q.reasoning);
  EXPECT_EQ(q.tool_format, ToolCallFormat::kHermes);
  Model llama = open_model("llama3-tiny-bf16.gguf");
  const TemplateFeatures l = template_features(llama.tmpl->source());
  EXPECT_FALSE(l.takes_tools);
  EXPECT_EQ(l.tool_format, ToolCallFormat::kNone);
  // A Llama 3.1 template asks for {"name": ..., "parameters": ...} after its header markers.
  const TemplateFeatures l31 = template_features(
      "{%- if tools %}<|start_header_id|>user<|end_header_id|>Respond with {\"name\": function name, "
      "\"parameters\": dictionary of argument name and its value}{% endif %}<|eot_id|>");
  EXPECT_EQ(l31.tool_format, ToolCallFormat::kLlama3Json);
}

}  // namespace
}  // namespace sy
