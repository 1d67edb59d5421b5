// Chat templates of the fixture models rendered exactly as Hugging Face transformers
// renders them: every chat[] golden of NAME-golden.json, plus Qwen3's thinking switch,
// reasoning stripped from earlier turns, and tools. The extra expected texts were produced
// by transformers' Jinja environment on the same template.
#include "common/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/gguf.h"
#include "common/gguf_writer.h"

namespace sy {
namespace {

using nlohmann::ordered_json;

const std::string kFixtures = SY_FIXTURES_DIR;

ordered_json read_golden(const std::string& name) {
  std::ifstream in(kFixtures + "/" + name + "-golden.json");
  EXPECT_TRUE(in.good()) << name;
  return ordered_json::parse(in);
}

// The BOS text as the GGUF declares it (tokenizer.ggml.bos_token_id into tokens), or "".
std::string gguf_bos(const ModelSource& m) {
  const gguf::File* f = m.gguf();
  if (f == nullptr || f->find("tokenizer.ggml.bos_token_id") == nullptr) return "";
  int64_t id = f->get_int("tokenizer.ggml.bos_token_id");
  return f->get_string_array("tokenizer.ggml.tokens").at(static_cast<size_t>(id));
}

struct Fixture {
  const char* golden;  // NAME of NAME-golden.json
  const char* model;   // GGUF file or Hugging Face directory under the fixtures
  const char* eos;
  const char* family;
};

const Fixture kFixturesUnderTest[] = {
    {"qwen3-tiny", "qwen3-tiny-bf16.gguf", "<|im_end|>", "qwen3"},
    {"qwen3-tiny", "qwen3-tiny", "<|im_end|>", "qwen3"},
    // The Qwen2 fixture carries the same (Qwen3) template as its tokenizer.
    {"qwen2-tiny", "qwen2-tiny-bf16.gguf", "<|im_end|>", "qwen3"},
    {"llama3-tiny", "llama3-tiny-bf16.gguf", "<|eot_id|>", "llama3"},
};

class ChatTemplateGolden : public testing::TestWithParam<Fixture> {};

TEST_P(ChatTemplateGolden, RendersEveryGoldenChat) {
  const Fixture& fx = GetParam();
  auto model = ModelSource::open(kFixtures + "/" + fx.model);
  ChatTemplate tmpl = ChatTemplate::from_model(*model, gguf_bos(*model), fx.eos);
  EXPECT_EQ(tmpl.family(), fx.family);
  ordered_json golden = read_golden(fx.golden);
  ASSERT_FALSE(golden["chat"].empty());
  for (const auto& chat : golden["chat"]) {
    ordered_json kwargs = chat.value("kwargs", ordered_json::object());
    EXPECT_EQ(tmpl.render(chat["messages"], true, kwargs), chat["text"].get<std::string>())
        << fx.model << ": " << chat["messages"].dump();
  }
}

INSTANTIATE_TEST_SUITE_P(ChatTemplate, ChatTemplateGolden, testing::ValuesIn(kFixturesUnderTest),
                         [](const testing::TestParamInfo<Fixture>& info) {
                           std::string name = info.param.model;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(ChatTemplate, Llama3BosComesFromTheGguf) {
  auto model = ModelSource::open(kFixtures + "/llama3-tiny-bf16.gguf");
  EXPECT_EQ(gguf_bos(*model), "<|begin_of_text|>");
}

class Qwen3Template : public testing::Test {
 protected:
  Qwen3Template()
      : model_(ModelSource::open(kFixtures + "/qwen3-tiny")),
        tmpl_(ChatTemplate::from_model(*model_, "", "<|im_end|>")) {}

  std::unique_ptr<ModelSource> model_;
  ChatTemplate tmpl_;
};

TEST_F(Qwen3Template, ThinkingSwitch) {
  auto messages = ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  const std::string base = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(tmpl_.render(messages, true), base);
  EXPECT_EQ(tmpl_.render(messages, true, {{"enable_thinking", true}}), base);
  EXPECT_EQ(tmpl_.render(messages, true, {{"enable_thinking", false}}),
            base + "<think>\n\n</think>\n\n");
  EXPECT_EQ(tmpl_.render(messages, false), "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_F(Qwen3Template, ReasoningOfEarlierTurnsIsStripped) {
  auto messages = ordered_json::parse(R"([
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "<think>\nThe user wants a sum.\n</think>\n\n2+2 is 4."},
    {"role": "user", "content": "And 3+3?"},
    {"role": "assistant", "content": "<think>\nAdd again.\n</think>\n\n6."}])");
  const std::string turns =
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n2+2 is 4.<|im_end|>\n"
      "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd again.\n"
      "</think>\n\n6.<|im_end|>\n";
  EXPECT_EQ(tmpl_.render(messages, true), turns + "<|im_start|>assistant\n");
  EXPECT_EQ(tmpl_.render(messages, false), turns);
}

TEST_F(Qwen3Template, ToolsAndToolCalls) {
  auto messages = ordered_json::parse(R"([
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
    {"role": "tool", "content": "{\"temperature\": 21}"},
    {"role": "user", "content": "Thanks, ünïcode 😀"}])");
  auto tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Get the current weather in a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}])");
  const std::string expected =
      "<|im_start|>system\nYou are a weather bot.\n\n# Tools\n\nYou may call one or more "
      "functions to assist with the user query.\n\nYou are provided with function signatures "
      "within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": "
      "{\"name\": \"get_weather\", \"description\": \"Get the current weather in a city\", "
      "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", "
      "\"description\": \"City name, e.g. Paris\"}, \"unit\": {\"type\": \"string\", \"enum\": "
      "[\"celsius\", \"fahrenheit\"]}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each "
      "function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
      "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather "
      "in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n{\"temperature\": 21}\n</tool_response><|im_end|>\n"
      "<|im_start|>user\nThanks, ünïcode 😀<|im_end|>\n<|im_start|>assistant\n<think>\n\n"
      "</think>\n\n";
  EXPECT_EQ(tmpl_.render(messages, true, {{"tools", tools}, {"enable_thinking", false}}), expected);
}

TEST_F(Qwen3Template, PlainJsonOverloadRendersTheSame) {
  auto messages = nlohmann::json::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(tmpl_.render(messages, true, nlohmann::json{{"enable_thinking", false}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, VariablesAsTransformersPassesThem) {
  ChatTemplate t(
      "{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ add_generation_prompt }}|{{ messages|length }}|{{ extra }}",
      "<s>", "</s>");
  auto messages = ordered_json::parse(R"([{"role": "user", "content": null}])");
  EXPECT_EQ(t.render(messages, true, {{"extra", 7}}), "<s>|</s>|True|True|True|1|7");
  // kwargs override the special tokens, as in transformers.
  EXPECT_EQ(t.render(messages, false, {{"eos_token", "<e>"}}), "<s>|<e>|True|True|False|1|");
  ChatTemplate no_bos("{{ bos_token is defined }}", "", "</s>");
  EXPECT_EQ(no_bos.render(messages, true), "False");
}

TEST(ChatTemplate, Families) {
  EXPECT_EQ(ChatTemplate("{{ '<|im_start|>' }}", "", "").family(), "chatml");
  EXPECT_EQ(ChatTemplate("{{ '<|im_start|><think>' }}", "", "").family(), "qwen3");
  EXPECT_EQ(ChatTemplate("<|start_header_id|>{{ x }}<|eot_id|>", "", "").family(), "llama3");
  EXPECT_EQ(ChatTemplate("[INST]{{ x }}[/INST]", "", "").family(), "unknown");
}

TEST(ChatTemplate, RejectsMalformedMessages) {
  ChatTemplate t("{% for m in messages %}{{ m.content }}{% endfor %}", "", "");
  const char* bad[] = {
      R"({"role": "user", "content": "x"})", R"(["not an object"])",
      R"([{"content": "no role"}])",         R"([{"role": 1, "content": "x"}])",
      R"([{"role": "user", "content": 5}])", R"([{"role": "user", "content": {"a": 1}}])",
  };
  for (const char* messages : bad) {
    EXPECT_THROW(t.render(ordered_json::parse(messages), true), std::invalid_argument) << messages;
  }
  auto ok = ordered_json::parse(R"([{"role": "user", "content": "x"}])");
  EXPECT_THROW(t.render(ok, true, {{"messages", ok}}), std::invalid_argument);
  EXPECT_THROW(t.render(ok, true, ordered_json::array()), std::invalid_argument);
  EXPECT_EQ(t.render(ok, true), "x");
  ordered_json deep = 1;
  for (int i = 0; i < 1000; ++i) deep = ordered_json::array({deep});
  auto deep_message = ordered_json::array({{{"role", "user"}, {"content", "x"}, {"extra", deep}}});
  EXPECT_THROW(t.render(deep_message, true), std::invalid_argument);
}

TEST(ChatTemplate, SyntaxErrorThrowsAtConstruction) {
  EXPECT_THROW(ChatTemplate("{% if %}", "", ""), jinja::TemplateError);
}

TEST(ChatTemplate, RaiseExceptionReachesTheCaller) {
  ChatTemplate t(
      "{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}", "", "");
  try {
    t.render(ordered_json::parse(R"([{"role": "assistant", "content": "x"}])"), true);
    FAIL();
  } catch (const jinja::TemplateError& e) {
    EXPECT_EQ(e.kind(), jinja::TemplateError::Kind::kRaised);
    EXPECT_STREQ(e.what(), "user first");
  }
}

TEST(ChatTemplate, ModelWithoutTemplateIsAModelFileError) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("sy_chat_template_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
  auto hf = ModelSource::open(dir.string());
  EXPECT_THROW(ChatTemplate::from_model(*hf, "", ""), ModelFileError);

  gguf::Writer w;
  w.set_string("general.architecture", "llama");
  std::string gguf_path = (dir / "empty.gguf").string();
  w.write(gguf_path);
  auto gguf = ModelSource::open(gguf_path);
  EXPECT_THROW(ChatTemplate::from_model(*gguf, "", ""), ModelFileError);
  fs::remove_all(dir);
}

TEST(ChatTemplate, NamedTemplateListInTokenizerConfig) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("sy_chat_template_named_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{}";
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D{{ messages|length }}"}]})";
  auto hf = ModelSource::open(dir.string());
  ChatTemplate t = ChatTemplate::from_model(*hf, "", "");
  EXPECT_EQ(t.render(ordered_json::array(), false), "D0");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sy
