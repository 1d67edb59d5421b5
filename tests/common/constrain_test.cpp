// The tool-call constraint engine (common/constrain): schemas it refuses, the byte
// automaton on written calls, and token masks on adversarial vocabularies checked
// against brute force (every token tried on a copy of the state), then random walks
// through the masks whose calls must parse (ChatOutputParser) and match their schema
// (json_schema_check.h, independent of the engine).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/constrain/token_mask.h"
#include "common/constrain/tool_constraint.h"
#include "common/tool_calls/chat_output_parser.h"
#include "json_schema_check.h"

namespace sy::constrain {
namespace {

using nlohmann::json;

const json kWeather = json::parse(R"({"type": "object", "properties": {
  "city": {"type": "string", "maxLength": 6, "description": "a city"},
  "days": {"type": "integer"},
  "unit": {"enum": ["c", "f"]},
  "ratio": {"type": ["number", "null"]},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
  "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}},
  "required": ["city", "unit"]})");
const json kNoArgs = json::parse(R"({"type": "object", "properties": {}})");

json spec(const std::string& format, bool parallel, const std::string& reasoning = "none") {
  return {{"format", format},
          {"tools", {{{"name", "get_weather"}, {"parameters", kWeather}}, {{"name", "get_time"}, {"parameters", kNoArgs}}}},
          {"parallel", parallel},
          {"reasoning", reasoning}};
}

std::shared_ptr<const ToolGrammar> compile(const json& s) {
  std::string error;
  auto g = ToolGrammar::compile(s, error);
  EXPECT_TRUE(g) << error;
  return g;
}

bool accepts(const ToolGrammar& g, const std::string& text, bool* accepting = nullptr) {
  GrammarState s = g.initial();
  for (char c : text)
    if (!g.advance(s, static_cast<uint8_t>(c))) return false;
  if (accepting) *accepting = g.accepting(s);
  return true;
}

TEST(ConstrainSchema, RefusesWhatTheMaskCannotEnforce) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"type", "string"}, {"pattern", "^a"}}, "'pattern'"},
      {{{"type", "string"}, {"format", "date"}}, "'format'"},
      {{{"anyOf", json::array({{{"type", "string"}}})}}, "'anyOf'"},
      {{{"$ref", "#/defs/x"}}, "'$ref'"},
      {{{"type", "number"}, {"minimum", 0}}, "'minimum'"},
      {{{"type", "object"}, {"additionalProperties", true}}, "additionalProperties"},
      {{{"type", "array"}}, "'items'"},
      {{{"description", "no type"}}, "'type'"},
      {{{"type", "tuple"}}, "not a JSON schema type"},
      {{{"type", json::array({"integer", "number"})}}, "use \"number\""},
      {{{"enum", json::array({json::object()})}}, "'enum'"},
  };
  for (const auto& [schema, needle] : cases) {
    json s = spec("hermes", true);
    s["tools"][0]["parameters"]["properties"]["x"] = schema;
    std::string error;
    EXPECT_FALSE(ToolGrammar::compile(s, error)) << schema;
    EXPECT_NE(error.find(needle), std::string::npos) << error;
    EXPECT_NE(error.find("tools[0].function.parameters.properties.x"), std::string::npos) << error;
  }
  std::string error;
  json s = spec("hermes", true);
  s["tools"][0]["parameters"] = {{"type", "string"}};
  EXPECT_FALSE(ToolGrammar::compile(s, error));
  EXPECT_NE(error.find("type \"object\""), std::string::npos) << error;
}

TEST(ConstrainAutomaton, AcceptsWellFormedCallsAndRefusesTheRest) {
  auto g = compile(spec("hermes", true));
  bool done = false;
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"f\", \"city\": \"P\\u00e9r\\\"s\", "
                           "\"days\": -12, \"ratio\": 1.5e+3, \"tags\": [\"a\", \"\xc3\xa9\"], \"opts\": {\"deep\": true}}}\n</tool_call>";
  EXPECT_TRUE(accepts(*g, call, &done));
  EXPECT_TRUE(done);
  EXPECT_TRUE(accepts(*g, call + "\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", &done));
  EXPECT_TRUE(done);
  EXPECT_TRUE(accepts(*g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"x\",\"unit\":\"c\",\"ratio\":null}", &done));
  EXPECT_FALSE(done);  // the call is not closed yet

  const std::string head = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {";
  for (const std::string bad : {
           "\"city\": \"x\"}",                          // required unit missing
           "\"city\": \"x\", \"city\": \"y\"",           // a key twice
           "\"town\": \"x\"",                            // not a property
           "\"city\": 5",                                // wrong type
           "\"city\": \"1234567\"",                      // past maxLength
           "\"days\": 01",                               // leading zero
           "\"days\": 1.5",                              // not an integer
           "\"unit\": \"k\"",                            // not in enum
           "\"city\": \"\\ud800\"",                      // lone surrogate
           "\"city\": \"\xc0\xaf\"",                     // overlong UTF-8
           "\"city\": \"\xed\xa0\x80\"",                 // UTF-8 surrogate
           "\"city\": \"a\nb\"",                         // control character
           "\"tags\": [\"a\", \"b\", \"c\"]",            // past maxItems
           "\"opts\": {}",                               // nested required
           "\"city\" : \"x\"",                           // space before ':'
           "\"city\":  \"x\"",                           // two spaces
       })
    EXPECT_FALSE(accepts(*g, head + bad + ", \"unit\": \"c\"}}\n</tool_call>")) << bad;
  EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"get_weathe\", "));
  EXPECT_FALSE(accepts(*g, "hello"));

  auto single = compile(spec("hermes", false));
  EXPECT_FALSE(accepts(*single, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n"));
  auto llama = compile(spec("llama3_json", true));
  EXPECT_TRUE(accepts(*llama, "{\"name\": \"get_time\", \"parameters\": {}};{\"name\": \"get_time\", \"parameters\": {}}", &done));
  EXPECT_TRUE(done);
  auto thinking = compile(spec("hermes", true, "optional"));
  EXPECT_TRUE(accepts(*thinking, "<think>a <b </thin </think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", &done));
  EXPECT_TRUE(done);
  EXPECT_TRUE(accepts(*thinking, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", &done));
  auto open = compile(spec("hermes", true, "open"));
  EXPECT_FALSE(accepts(*open, "x</think>\nhello"));
}

// Single bytes (so every text is reachable) and tokens that span structure: quotes with
// braces, whole headers, partial and whole multi-byte characters, escapes cut in half.
std::vector<std::string> adversarial_vocabulary() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* t : {"\"}", "\"}}", "\"}}\n</tool_call>", "\"},", "\", \"", "\": ", "\":\"", "{\"", "[\"", "\"]", "\"]}",
                        "<tool_call>", "</tool_call>", "<tool_call>\n{\"name\": \"", "get_weather", "get_", "_time\"", "\", \"arguments\": {",
                        "arguments", "\"unit\": \"c\"", "\"city\"", "city", "days\": -", "1e", "0.", "00", "-0", "12345678901234567",
                        "true", "null}", "false,", "\\u00e9", "\\u", "d800", "\\\"", "\\n", "\\", "\xc3", "\xa9", "\xc3\xa9", "\xe2\x82",
                        "\xac\"", "\xf0\x9f\x99\x82", "\xf0\x9f", "\x99\x82\"}", "</think>", "<think>", "</th", "ink>\n\n<tool", "\n<",
                        "}\n", "}};", "\"opts\": {\"deep\": ", "abc", "abcdefgh", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"})
    v.push_back(t);
  v.push_back("<|eos|>");  // a special stop token
  return v;
}

VocabIndex adversarial_index() {
  auto v = adversarial_vocabulary();
  std::vector<bool> special(v.size(), false);
  special.back() = true;
  return VocabIndex(v, special, {static_cast<int32_t>(v.size() - 1)});
}

std::set<int32_t> brute_force(const ToolGrammar& g, const GrammarState& s, const VocabIndex& v, const TokenMasker& m) {
  std::set<int32_t> out;
  for (int32_t id = 0; id < v.vocab_size(); ++id) {
    GrammarState t;
    t.copy_from(s);
    if (m.advance(g, t, id)) out.insert(id);
  }
  if (g.accepting(s))
    for (int32_t id : v.stop_ids()) out.insert(id);
  return out;
}

ChatMessage parse(const std::string& text, ToolCallFormat format, bool reasoning) {
  ChatOutputSpec out;
  out.tool_format = format;
  out.reasoning = reasoning;
  ChatOutputParser p(out, "call_");
  ChatMessage m;
  m.apply(p.feed(text));
  m.apply(p.finish());
  return m;
}

// Walks random paths through the masks; at every step the mask equals brute force, is
// never empty, and the finished text is calls whose arguments match the schema.
void random_walks(const json& s, ToolCallFormat format, int walks) {
  auto g = compile(s);
  const VocabIndex v = adversarial_index();
  TokenMasker m(v);
  std::mt19937 rng(7);
  std::vector<int32_t> allowed;
  int complete = 0;
  for (int w = 0; w < walks; ++w) {
    GrammarState st = g->initial();
    std::string text;
    bool ended = false;
    for (int step = 0; step < 400 && !ended; ++step) {
      m.allowed_tokens(*g, st, allowed);
      ASSERT_FALSE(allowed.empty()) << text;
      const std::set<int32_t> got(allowed.begin(), allowed.end());
      ASSERT_EQ(got.size(), allowed.size()) << "an id twice after " << text;
      ASSERT_EQ(got, brute_force(*g, st, v, m)) << "after " << text;
      // Prefer closing moves now and then, so walks finish: stop ids and quotes/braces.
      int32_t id = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      if (step > 40) {
        std::vector<int32_t> closers;
        for (int32_t a : allowed)
          if (v.bytes(a).find_first_of("\"}]") != std::string::npos) closers.push_back(a);
        if (!closers.empty()) id = closers[std::uniform_int_distribution<size_t>(0, closers.size() - 1)(rng)];
        for (int32_t a : allowed)
          if (v.is_stop(a)) id = a;
      }
      if (v.is_stop(id)) {
        ended = true;
        break;
      }
      ASSERT_TRUE(m.advance(*g, st, id));
      text += v.bytes(id);
    }
    if (!ended) continue;  // ran long: the masks were still checked at every step
    ++complete;
    const ChatMessage msg = parse(text, format, s["reasoning"] != "none");
    ASSERT_FALSE(msg.tool_calls.empty()) << text;
    EXPECT_EQ(msg.content, "") << text;
    if (!s["parallel"].get<bool>()) {
      EXPECT_EQ(msg.tool_calls.size(), 1u) << text;
    }
    for (const ToolCall& c : msg.tool_calls) {
      const json args = json::parse(c.arguments, nullptr, false);
      ASSERT_FALSE(args.is_discarded()) << c.arguments;
      const json& schema = c.name == "get_weather" ? kWeather : kNoArgs;
      EXPECT_EQ(sy::testing::schema_violation(args, schema), "") << c.arguments;
    }
  }
  EXPECT_GE(complete, walks / 2);  // most walks end in calls that are checked
}

TEST(ConstrainMask, EqualsBruteForceOnAdversarialVocabularyHermes) { random_walks(spec("hermes", true), ToolCallFormat::kHermes, 60); }
TEST(ConstrainMask, EqualsBruteForceOnAdversarialVocabularySingleCall) { random_walks(spec("hermes", false), ToolCallFormat::kHermes, 40); }
TEST(ConstrainMask, EqualsBruteForceOnAdversarialVocabularyLlama) { random_walks(spec("llama3_json", true), ToolCallFormat::kLlama3Json, 40); }
TEST(ConstrainMask, EqualsBruteForceWithReasoning) { random_walks(spec("hermes", true, "optional"), ToolCallFormat::kHermes, 30); }

TEST(ConstrainMask, StopOnlyAfterACompleteCall) {
  auto g = compile(spec("hermes", false));
  const VocabIndex v = adversarial_index();
  TokenMasker m(v);
  std::vector<int32_t> allowed;
  GrammarState s = g->initial();
  const int32_t eos = v.stop_ids()[0];
  for (char c : std::string("<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call")) {
    m.allowed_tokens(*g, s, allowed);
    EXPECT_EQ(std::count(allowed.begin(), allowed.end(), eos), 0);
    ASSERT_TRUE(g->advance(s, static_cast<uint8_t>(c)));
  }
  ASSERT_TRUE(g->advance(s, '>'));
  m.allowed_tokens(*g, s, allowed);
  EXPECT_EQ(allowed, std::vector<int32_t>{eos});  // no second call without parallel calls
}

TEST(ConstrainSpec, FromTheRequest) {
  OpenAiRequest req;
  req.kind = ApiKind::kChatCompletion;
  req.tools = json::parse(R"([{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
                              {"type": "function", "function": {"name": "b"}}])");
  ChatOutputSpec out;
  out.tool_format = ToolCallFormat::kHermes;
  Json s;
  req.tool_choice.mode = ToolChoice::Mode::kAuto;
  EXPECT_FALSE(tool_constraint_spec(req, out, s));
  EXPECT_TRUE(s.is_null());
  req.tool_choice.mode = ToolChoice::Mode::kNamed;
  req.tool_choice.name = "b";
  EXPECT_FALSE(tool_constraint_spec(req, out, s));
  ASSERT_EQ(s["tools"].size(), 1u);
  EXPECT_EQ(s["tools"][0]["name"], "b");
  EXPECT_EQ(s["parallel"], false);
  req.tool_choice.mode = ToolChoice::Mode::kRequired;
  req.tools[0]["function"]["parameters"]["properties"] = {{"x", {{"type", "string"}, {"pattern", "a"}}}};
  auto e = tool_constraint_spec(req, out, s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "tools");
  out.tool_format = ToolCallFormat::kNone;
  e = tool_constraint_spec(req, out, s);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tool_choice");
}

}  // namespace
}  // namespace sy::constrain
