// ChatOutputParser on model outputs written the way Qwen (Hermes <tool_call>) and Llama 3.1
// (JSON) models write them: complete, truncated, malformed, braces and tags inside JSON
// strings, two calls, text around them, unicode. Each is parsed whole against a
// hand-written expectation, then streamed as the model's own tokens (the fixtures' real
// tokenizers, decoded incrementally) at 1, 2 and 5 tokens per delta: every stream must
// reassemble into the whole-text parse, show no markup as content, and announce each call
// (index, id, name) before its arguments.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/model_source.h"
#include "common/tokenizer/incremental_decoder.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tool_calls/chat_output_parser.h"

namespace sy {
namespace {

const std::string kFixtures = SY_FIXTURES_DIR;

const Tokenizer& qwen_tokenizer() {
  static std::unique_ptr<Tokenizer> t = Tokenizer::from_model(*ModelSource::open(kFixtures + "/qwen3-tiny"));
  return *t;
}
const Tokenizer& llama_tokenizer() {
  static std::unique_ptr<Tokenizer> t =
      Tokenizer::from_model(*ModelSource::open(kFixtures + "/llama3-tiny-bf16.gguf"));
  return *t;
}

ChatOutputSpec hermes(bool reasoning = true) {
  ChatOutputSpec s;
  s.tool_format = ToolCallFormat::kHermes;
  s.reasoning = reasoning;
  return s;
}
ChatOutputSpec llama() {
  ChatOutputSpec s;
  s.tool_format = ToolCallFormat::kLlama3Json;
  return s;
}

struct Call {
  std::string name, arguments;
};

struct Case {
  const char* name;
  ChatOutputSpec spec;
  std::string text;
  std::string reasoning, content;
  std::vector<Call> calls;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

const std::string kWeather = R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})";
const std::string kWeatherArgs = R"({"city": "Paris", "unit": "celsius"})";

std::vector<Case> cases() {
  ChatOutputSpec sir = hermes();
  sir.starts_in_reasoning = true;
  ChatOutputSpec serial = hermes();
  serial.parallel_tool_calls = false;
  ChatOutputSpec think_only;
  think_only.reasoning = true;
  return {
      {"hermes_one_call", hermes(), "<tool_call>\n" + kWeather + "\n</tool_call>", "", "", {{"get_weather", kWeatherArgs}}},
      {"hermes_think_then_call", hermes(),
       "<think>\nThe user asks about the weather in Paris. I should call get_weather.\n</think>\n\n<tool_call>\n" + kWeather +
           "\n</tool_call>",
       "The user asks about the weather in Paris. I should call get_weather.", "", {{"get_weather", kWeatherArgs}}},
      {"hermes_two_calls", hermes(),
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n"
       "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}\n</tool_call>",
       "", "", {{"get_weather", R"({"city": "Paris"})"}, {"get_time", R"({"timezone": "Europe/Paris"})"}}},
      {"hermes_text_before_and_after", hermes(), "Let me check that for you.\n<tool_call>\n" + kWeather + "\n</tool_call>\nOne moment.",
       "", "Let me check that for you.\nOne moment.", {{"get_weather", kWeatherArgs}}},
      {"hermes_braces_and_tags_in_strings", hermes(),
       "<tool_call>\n{\"name\": \"run_code\", \"arguments\": {\"code\": \"if (x) { return \\\"}\\\"; } </tool_call> <tool_call> <think>\", "
       "\"n\": [1, {\"k\": \"]\"}]}}\n</tool_call>",
       "", "",
       {{"run_code", "{\"code\": \"if (x) { return \\\"}\\\"; } </tool_call> <tool_call> <think>\", \"n\": [1, {\"k\": \"]\"}]}"}}},
      {"hermes_unicode", hermes(),
       "Voilà 👍\n<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"city\": \"Zürich\", \"q\": \"天気 😀 \\u00e9\"}}\n</tool_call>",
       "", "Voilà 👍", {{"lookup", "{\"city\": \"Zürich\", \"q\": \"天気 😀 \\u00e9\"}"}}},
      {"hermes_parameters_key", hermes(), "<tool_call>\n{\"name\": \"f\", \"parameters\": {\"a\": [1, 2.5e3, true, null]}}\n</tool_call>",
       "", "", {{"f", R"({"a": [1, 2.5e3, true, null]})"}}},
      {"hermes_truncated_in_arguments", hermes(), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par", "", "",
       {{"get_weather", "{\"city\": \"Par"}}},
      {"hermes_truncated_in_header", hermes(), "Sure.\n<tool_call>\n{\"name\": \"get_we", "", "Sure.", {}},
      {"hermes_truncated_in_tag", hermes(), "Sure.\n<tool_", "", "Sure.\n<tool_", {}},
      {"hermes_missing_closing_brace", hermes(),
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call>", "", "",
       {{"get_weather", R"({"city": "Paris"})"}}},
      {"hermes_not_json_is_dropped", hermes(), "<tool_call>\nget_weather(city=\"Paris\")\n</tool_call>\nDone.", "", "Done.", {}},
      {"hermes_malformed_arguments_keep_valid_prefix", hermes(),
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,, \"b\": 2}}\n</tool_call>", "", "", {{"f", "{\"a\": 1,"}}},
      {"hermes_keys_in_other_order", hermes(), "<tool_call>\n{\"arguments\": {\"x\": 1}, \"name\": \"f\"}\n</tool_call>", "", "",
       {{"f", R"({"x":1})"}}},
      {"hermes_arguments_as_string", hermes(),
       "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>", "", "", {{"f", R"({"x": 1})"}}},
      {"hermes_call_inside_reasoning_is_not_a_call", hermes(),
       "<think>\nMaybe <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> would work.\n</think>\n\nThe answer is 4.",
       "Maybe <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> would work.", "The answer is 4.", {}},
      {"hermes_partial_tag_that_is_text", hermes(), "Use a <tool_ chain> or <think> here.", "",
       "Use a <tool_ chain> or <think> here.", {}},
      {"hermes_truncated_reasoning", hermes(), "<think>\nLet me think about </thi", "Let me think about </thi", "", {}},
      {"hermes_empty_thinking", hermes(), "<think>\n\n</think>\n\nHello!", "", "Hello!", {}},
      {"hermes_starts_in_reasoning", sir, "I need the weather.\n</think>\n\n<tool_call>\n" + kWeather + "\n</tool_call>",
       "I need the weather.", "", {{"get_weather", kWeatherArgs}}},
      {"hermes_serial_keeps_first_call", serial,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
       "", "", {{"a", "{}"}}},
      {"no_tools_keeps_tags_as_content", think_only, "<think>x</think>y <tool_call>{}</tool_call>", "x",
       "y <tool_call>{}</tool_call>", {}},
      {"llama_one_call", llama(), R"({"name": "get_weather", "parameters": {"city": "Paris"}})", "", "",
       {{"get_weather", R"({"city": "Paris"})"}}},
      {"llama_python_tag", llama(), R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}})", "", "",
       {{"get_weather", R"({"city": "Paris"})"}}},
      {"llama_two_calls", llama(), R"({"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": "}{"}})", "", "",
       {{"a", R"({"x": 1})"}, {"b", R"({"y": "}{"})"}}},
      {"llama_plain_answer", llama(), "The weather in Paris is mild.", "", "The weather in Paris is mild.", {}},
      {"llama_json_answer_is_content", llama(), R"({"answer": 42})", "", R"({"answer": 42})", {}},
      {"llama_truncated", llama(), R"({"name": "get_weather", "parameters": {"city": "Pa)", "", "",
       {{"get_weather", R"({"city": "Pa)"}}},
      {"llama_unicode", llama(), R"({"name": "translate", "parameters": {"text": "こんにちは 🌸", "to": "français"}})", "", "",
       {{"translate", R"({"text": "こんにちは 🌸", "to": "français"})"}}},
  };
}

ChatMessage parse_whole(const ChatOutputSpec& spec, const std::string& text) {
  ChatOutputParser p(spec, "call_t_");
  ChatMessage m;
  m.apply(p.feed(text));
  m.apply(p.finish());
  return m;
}

// The text as the model's tokens, detokenized incrementally: one piece per token.
std::vector<std::string> token_pieces(const Tokenizer& tok, const std::string& text) {
  IncrementalDecoder dec(tok);
  std::vector<std::string> pieces;
  for (int32_t id : tok.encode(text, false)) pieces.push_back(dec.push(id));
  pieces.push_back(dec.finish());
  return pieces;
}

struct StreamCheck {
  ChatMessage message;
  std::string problem;  // "" when every delta was well-formed
};

// Streams `pieces` in deltas of `per_delta` tokens, checking each delta as a client would.
StreamCheck stream(const ChatOutputSpec& spec, const std::vector<std::string>& pieces, size_t per_delta) {
  ChatOutputParser p(spec, "call_t_");
  StreamCheck out;
  auto take = [&](const std::vector<ChatEvent>& events) {
    for (const ChatEvent& e : events) {
      if (e.text.empty() && e.kind != ChatEvent::Kind::kToolCallStart) out.problem = "an empty delta";
      if (e.kind == ChatEvent::Kind::kToolCallStart) {
        if (e.index != static_cast<int32_t>(out.message.tool_calls.size())) out.problem = "call indices out of order";
        if (e.id != "call_t_" + std::to_string(e.index)) out.problem = "call id " + e.id;
      }
      if (e.kind == ChatEvent::Kind::kToolCallArguments && e.index >= static_cast<int32_t>(out.message.tool_calls.size()))
        out.problem = "arguments before their call";
      out.message.apply({e});
    }
  };
  for (size_t i = 0; i < pieces.size(); i += per_delta) {
    std::string delta;
    for (size_t k = i; k < std::min(pieces.size(), i + per_delta); ++k) delta += pieces[k];
    take(p.feed(delta));
  }
  take(p.finish());
  return out;
}

void expect_same(const ChatMessage& got, const ChatMessage& want, const std::string& where) {
  EXPECT_EQ(got.reasoning, want.reasoning) << where;
  EXPECT_EQ(got.content, want.content) << where;
  ASSERT_EQ(got.tool_calls.size(), want.tool_calls.size()) << where;
  for (size_t i = 0; i < want.tool_calls.size(); ++i) {
    EXPECT_EQ(got.tool_calls[i].name, want.tool_calls[i].name) << where;
    EXPECT_EQ(got.tool_calls[i].arguments, want.tool_calls[i].arguments) << where;
    EXPECT_EQ(got.tool_calls[i].id, want.tool_calls[i].id) << where;
  }
}

class Recorded : public ::testing::TestWithParam<Case> {};

TEST_P(Recorded, WholeTextParse) {
  const Case& c = GetParam();
  const ChatMessage m = parse_whole(c.spec, c.text);
  EXPECT_EQ(m.reasoning, c.reasoning);
  EXPECT_EQ(m.content, c.content);
  ASSERT_EQ(m.tool_calls.size(), c.calls.size());
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(m.tool_calls[i].id, "call_t_" + std::to_string(i));
    EXPECT_EQ(m.tool_calls[i].name, c.calls[i].name);
    EXPECT_EQ(m.tool_calls[i].arguments, c.calls[i].arguments);
  }
}

TEST_P(Recorded, StreamedAtOneTwoAndFiveTokensPerDelta) {
  const Case& c = GetParam();
  const Tokenizer& tok = c.spec.tool_format == ToolCallFormat::kLlama3Json ? llama_tokenizer() : qwen_tokenizer();
  const std::vector<std::string> pieces = token_pieces(tok, c.text);
  const ChatMessage whole = parse_whole(c.spec, c.text);
  for (size_t per : {1, 2, 5}) {
    const StreamCheck s = stream(c.spec, pieces, per);
    EXPECT_EQ(s.problem, "") << per << " tokens per delta";
    expect_same(s.message, whole, std::to_string(per) + " tokens per delta");
  }
  // Byte by byte too: a tag split anywhere is held back.
  std::vector<std::string> bytes;
  for (char ch : c.text) bytes.emplace_back(1, ch);
  const StreamCheck s = stream(c.spec, bytes, 1);
  EXPECT_EQ(s.problem, "");
  expect_same(s.message, whole, "byte by byte");
}

INSTANTIATE_TEST_SUITE_P(ChatOutputParser, Recorded, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// Generated conversations: optional reasoning, text before, 1-3 calls whose arguments hold
// the troublesome characters, text after. The expected calls are known by construction.
struct Generated {
  std::string text, reasoning, content;
  std::vector<Call> calls;
};

Generated generate(std::mt19937& rng) {
  static const std::vector<std::string> kValues = {
      R"("Paris")", R"("}{ ][")", R"("</tool_call>")", R"("<tool_call>{\"name\": \"x\"}")", R"("line\nbreak \"quoted\"")",
      R"("Zürich 天気 😀")", R"(-12.5e-3)", R"(0)", R"(true)", R"(null)", R"([1, "a", {"b": []}])", R"({"nested": {"k": "v}"}})",
      R"("\u00e9\ud83d\ude00")", R"("<think>not reasoning</think>")"};
  static const std::vector<std::string> kNames = {"get_weather", "search_web", "run_sql", "send_email", "calc"};
  static const std::vector<std::string> kBefore = {"", "Let me look that up.", "Voilà 👍 I'll check:", "Sure"};
  static const std::vector<std::string> kAfter = {"", "Waiting for results.", "¿Algo más?"};
  Generated g;
  if (rng() % 2) {
    g.reasoning = "The user wants data; " + kNames[rng() % kNames.size()] + " with {braces} fits.";
    g.text = "<think>\n" + g.reasoning + "\n</think>\n\n";
  }
  const std::string before = kBefore[rng() % kBefore.size()];
  g.text += before.empty() ? "" : before + "\n";
  const int n = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    Call c{kNames[rng() % kNames.size()], "{"};
    const int args = static_cast<int>(rng() % 4);
    for (int a = 0; a < args; ++a)
      c.arguments += (a ? ", " : "") + std::string("\"k") + std::to_string(a) + "\": " + kValues[rng() % kValues.size()];
    c.arguments += "}";
    g.text += (i ? "\n" : "") + std::string("<tool_call>\n{\"name\": \"") + c.name + "\", \"arguments\": " + c.arguments + "}\n</tool_call>";
    g.calls.push_back(c);
  }
  const std::string after = kAfter[rng() % kAfter.size()];
  if (!after.empty()) g.text += "\n" + after;
  g.content = before + (before.empty() || after.empty() ? "" : "\n") + after;
  return g;
}

TEST(ChatOutputParser, GeneratedCallsReassembleAtEveryDeltaSize) {
  std::mt19937 rng(20261201);
  std::vector<Generated> corpus;
  size_t total_calls = 0;
  while (total_calls < 250) {
    corpus.push_back(generate(rng));
    total_calls += corpus.back().calls.size();
  }
  for (size_t per : {1, 2, 5}) {
    size_t matched = 0;
    for (const Generated& g : corpus) {
      const ChatMessage whole = parse_whole(hermes(), g.text);
      ASSERT_EQ(whole.reasoning, g.reasoning) << g.text;
      ASSERT_EQ(whole.content, g.content) << g.text;
      ASSERT_EQ(whole.tool_calls.size(), g.calls.size()) << g.text;
      const StreamCheck s = stream(hermes(), token_pieces(qwen_tokenizer(), g.text), per);
      EXPECT_EQ(s.problem, "") << g.text;
      EXPECT_EQ(s.message.content.find("tool_call>"), std::string::npos) << g.text;
      EXPECT_EQ(s.message.reasoning, whole.reasoning);
      EXPECT_EQ(s.message.content, whole.content);
      for (size_t i = 0; i < g.calls.size() && i < s.message.tool_calls.size(); ++i) {
        const ToolCall& c = s.message.tool_calls[i];
        if (c.name == g.calls[i].name && c.arguments == g.calls[i].arguments && c.arguments == whole.tool_calls[i].arguments &&
            c.id == whole.tool_calls[i].id)
          ++matched;
      }
    }
    EXPECT_EQ(matched, total_calls) << per << " tokens per delta";
    EXPECT_GE(matched, 250u);
  }
}

// A block nested far deeper than any call is dropped, not parsed (no deep recursion).
TEST(ChatOutputParser, DeepBlocksAreDropped) {
  const std::string deep = "<tool_call>" + std::string(100000, '[') + "</tool_call>ok";
  const ChatMessage m = parse_whole(hermes(), deep);
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "ok");
  const std::string deep_args = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100000, '[');
  const ChatMessage t = parse_whole(hermes(), deep_args);
  ASSERT_EQ(t.tool_calls.size(), 1u);  // streamed arguments keep their (truncated) text
  EXPECT_EQ(t.tool_calls[0].arguments.size(), 100006u);
}

// A header past 1024 bytes is not streamed: the block is read whole when it closes,
// however the text is chunked; a long unclosed block costs linear time.
TEST(ChatOutputParser, OverlongHeadersAreReadWhole) {
  const std::string text = "<tool_call>{\"name\": \"" + std::string(2000, 'f') + "\", \"arguments\": {}}</tool_call>after";
  const ChatMessage whole = parse_whole(hermes(), text);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  EXPECT_EQ(whole.tool_calls[0].name, std::string(2000, 'f'));
  EXPECT_EQ(whole.tool_calls[0].arguments, "{}");
  EXPECT_EQ(whole.content, "after");
  std::vector<std::string> bytes;
  for (char ch : text) bytes.emplace_back(1, ch);
  expect_same(stream(hermes(), bytes, 7).message, whole, "7 bytes per delta");
  ChatOutputParser p(hermes(), "c");
  p.feed("<tool_call>not a header ");
  for (int i = 0; i < 200000; ++i) p.feed("x");  // quadratic rescans would take minutes
  ChatMessage m;
  m.apply(p.finish());
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "");
}

// Everything it is fed, in any shape, ends without a crash and with well-formed events.
TEST(ChatOutputParser, SurvivesArbitraryText) {
  std::mt19937 rng(5);
  const std::vector<std::string> atoms = {"<tool_call>", "</tool_call>", "<think>", "</think>", "{", "}", "\"", "\\",
                                          ":", ",", "\"name\"", "\"arguments\"", " ", "\n", "x", "é", "[", "]", "<|python_tag|>"};
  for (int n = 0; n < 2000; ++n) {
    std::string text;
    const int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) text += atoms[rng() % atoms.size()];
    for (const ChatOutputSpec& spec : {hermes(), hermes(false), llama()}) {
      const ChatMessage whole = parse_whole(spec, text);
      std::vector<std::string> bytes;
      for (char ch : text) bytes.emplace_back(1, ch);
      const StreamCheck s = stream(spec, bytes, 1 + rng() % 3);
      EXPECT_EQ(s.problem, "") << text;
      expect_same(s.message, whole, text);
    }
  }
}

}  // namespace
}  // namespace sy
