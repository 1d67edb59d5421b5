// OpenAI request parsing and validation, table-driven: every kind of bad request gets a
// 400 (or 404/413 upstream) with an error naming the field; good requests parse into the
// right fields. Also check_prompt against a model's limits, the X-Priority header, and
// the response and stream chunk shapes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/protocol/openai.h"

namespace sy {
namespace {

struct BadCase {
  const char* name;
  ApiKind kind;
  std::string body;
  std::string param;     // expected ApiError::param ("" = any)
  std::string contains;  // expected in the message
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) {
  return os << c.name;
}

const ApiKind kC = ApiKind::kCompletion;
const ApiKind kChat = ApiKind::kChatCompletion;

std::string chat_with(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" +
         (extra.empty() ? "" : "," + extra) + "}";
}
std::string completion_with(const std::string& extra) {
  return R"({"model":"m","prompt":"hi")" + (extra.empty() ? "" : "," + extra) + "}";
}

std::vector<BadCase> bad_cases() {
  std::string deep = R"({"prompt":"x","a":)" + std::string(100, '[') + std::string(100, ']') + "}";
  std::string stops = "[";
  for (int i = 0; i < 17; ++i)
    stops += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  stops += "]";
  return {
      // The body as a whole.
      {"malformed_json", kC, R"({"prompt": "a",)", "", "malformed JSON"},
      {"trailing_garbage", kC, R"({"prompt": "a"} x)", "", "malformed JSON"},
      {"empty_body", kChat, "", "", "malformed JSON"},
      {"not_an_object", kC, "[1,2]", "", "must be a JSON object"},
      {"invalid_utf8", kC, "{\"prompt\":\"\xff\xfe\"}", "", "not valid UTF-8"},
      {"lone_surrogate_escape", kC, R"({"prompt":"\ud800"})", "", "malformed JSON"},
      {"too_deep", kC, deep, "", "nests deeper"},
      // The prompt.
      {"prompt_missing", kC, R"({"model":"m"})", "prompt", "required"},
      {"prompt_null", kC, R"({"prompt":null})", "prompt", "required"},
      {"prompt_number", kC, R"({"prompt":5})", "prompt", "must be a string or an array"},
      {"prompt_empty_array", kC, R"({"prompt":[]})", "prompt", "must not be empty"},
      {"prompt_batch_of_strings", kC, R"({"prompt":["a","b"]})", "prompt",
       "one prompt per request"},
      {"prompt_batch_of_ids", kC, R"({"prompt":[[1,2],[3]]})", "prompt", "one prompt per request"},
      {"prompt_negative_id", kC, R"({"prompt":[1,-2]})", "prompt", "not a valid token id"},
      {"prompt_huge_id", kC, R"({"prompt":[1,1099511627776]})", "prompt", "not a valid token id"},
      {"prompt_float_id", kC, R"({"prompt":[1,2.5]})", "prompt", "must be a token id"},
      {"prompt_mixed", kC, R"({"prompt":[1,"a"]})", "prompt", "must be a token id"},
      {"prompt_list_of_objects", kC, R"({"prompt":[{}]})", "prompt",
       "must be a string or an array of token ids"},
      {"suffix", kC, completion_with(R"("suffix":"end")"), "suffix", "not supported"},
      // Choices.
      {"n_2", kC, completion_with(R"("n":2)"), "n", "must be 1"},
      {"n_0", kChat, chat_with(R"("n":0)"), "n", "must be 1"},
      {"n_absurd", kChat, chat_with(R"("n":100000000000)"), "n", "must be 1"},
      {"n_float", kC, completion_with(R"("n":1e30)"), "n", "must be an integer"},
      {"n_string", kC, completion_with(R"("n":"1")"), "n", "must be an integer"},
      {"best_of_3", kC, completion_with(R"("best_of":3)"), "best_of", "must be 1"},
      {"echo", kC, completion_with(R"("echo":true)"), "echo", "not supported"},
      {"echo_chat", kChat, chat_with(R"("echo":true)"), "echo", "not supported"},
      // Sampling.
      {"temperature_string", kC, completion_with(R"("temperature":"hot")"), "temperature",
       "must be a number"},
      {"temperature_negative", kC, completion_with(R"("temperature":-1)"), "temperature",
       "temperature"},
      {"temperature_huge", kChat, chat_with(R"("temperature":1e300)"), "temperature",
       "out of range"},
      {"top_p_zero", kC, completion_with(R"("top_p":0)"), "top_p", "top_p"},
      {"top_p_above_one", kC, completion_with(R"("top_p":1.5)"), "top_p", "top_p"},
      {"top_k_negative", kC, completion_with(R"("top_k":-2)"), "top_k", "top_k"},
      {"top_k_float", kC, completion_with(R"("top_k":2.5)"), "top_k", "must be an integer"},
      {"min_p_two", kC, completion_with(R"("min_p":2)"), "min_p", "min_p"},
      {"repetition_penalty_zero", kC, completion_with(R"("repetition_penalty":0)"),
       "repetition_penalty", "repetition_penalty"},
      {"presence_penalty_3", kChat, chat_with(R"("presence_penalty":3)"), "presence_penalty",
       "presence_penalty"},
      {"frequency_penalty_bool", kChat, chat_with(R"("frequency_penalty":true)"),
       "frequency_penalty", "must be a number"},
      {"seed_string", kC, completion_with(R"("seed":"42")"), "seed", "must be an integer"},
      {"stop_number", kC, completion_with(R"("stop":5)"), "stop", "string or an array"},
      {"stop_array_of_numbers", kC, completion_with(R"("stop":[1])"), "stop", "must be a string"},
      {"stop_empty_string", kChat, chat_with(R"("stop":[""])"), "stop", "stop strings"},
      {"stop_too_many", kChat, chat_with("\"stop\":" + stops), "stop", "at most 16"},
      {"stop_token_ids_negative", kC, completion_with(R"("stop_token_ids":[-1])"), "stop_token_ids",
       "must be in"},
      {"stop_token_ids_string", kC, completion_with(R"("stop_token_ids":"1")"), "stop_token_ids",
       "array of integers"},
      {"ignore_eos_string", kC, completion_with(R"("ignore_eos":"yes")"), "ignore_eos",
       "must be a boolean"},
      {"max_tokens_zero", kC, completion_with(R"("max_tokens":0)"), "max_tokens",
       "must be an integer in [1,"},
      {"max_tokens_negative", kChat, chat_with(R"("max_tokens":-5)"), "max_tokens",
       "must be an integer in [1,"},
      {"max_tokens_huge", kC, completion_with(R"("max_tokens":1099511627776)"), "max_tokens",
       "must be an integer in [1,"},
      {"max_tokens_float", kC, completion_with(R"("max_tokens":10.5)"), "max_tokens",
       "must be an integer"},
      {"max_completion_tokens_zero", kChat, chat_with(R"("max_completion_tokens":0)"),
       "max_completion_tokens", "[1,"},
      {"completion_logprobs_21", kC, completion_with(R"("logprobs":21)"), "logprobs", "[0, 20]"},
      {"completion_logprobs_bool", kC, completion_with(R"("logprobs":true)"), "logprobs",
       "must be an integer"},
      {"chat_logprobs_int", kChat, chat_with(R"("logprobs":3)"), "logprobs", "must be a boolean"},
      {"chat_top_logprobs_alone", kChat, chat_with(R"("top_logprobs":3)"), "top_logprobs",
       "needs 'logprobs'"},
      {"chat_top_logprobs_21", kChat, chat_with(R"("logprobs":true,"top_logprobs":21)"),
       "top_logprobs", "[0, 20]"},
      // Streaming, priority, identity.
      {"stream_string", kC, completion_with(R"("stream":"yes")"), "stream", "must be a boolean"},
      {"stream_options_number", kC, completion_with(R"("stream":true,"stream_options":5)"),
       "stream_options", "object"},
      {"include_usage_string", kC,
       completion_with(R"("stream":true,"stream_options":{"include_usage":"y"})"),
       "stream_options.include_usage", "must be a boolean"},
      {"priority_unknown_name", kC, completion_with(R"("priority":"urgent")"), "priority",
       "interactive, standard, batch"},
      {"priority_out_of_range", kChat, chat_with(R"("priority":1000)"), "priority",
       "must be in [-100, 100]"},
      {"priority_float", kChat, chat_with(R"("priority":1.5)"), "priority", "must be an integer"},
      {"user_number", kC, completion_with(R"("user":5)"), "user", "must be a string"},
      {"model_number", kC, R"({"model":5,"prompt":"x"})", "model", "must be a string"},
      // Chat messages.
      {"messages_missing", kChat, R"({"model":"m"})", "messages", "required"},
      {"messages_object", kChat, R"({"messages":{}})", "messages", "must be an array"},
      {"messages_empty", kChat, R"({"messages":[]})", "messages", "must not be empty"},
      {"message_not_object", kChat, R"({"messages":["hi"]})", "messages",
       "messages[0]' must be an object"},
      {"role_missing", kChat, R"({"messages":[{"content":"hi"}]})", "messages",
       "role' must be a string"},
      {"role_unknown", kChat, R"({"messages":[{"role":"robot","content":"hi"}]})", "messages",
       "must be one of"},
      {"content_missing", kChat, R"({"messages":[{"role":"user"}]})", "messages",
       "content' is required"},
      {"content_number", kChat, R"({"messages":[{"role":"user","content":5}]})", "messages",
       "string or an array of text parts"},
      {"content_image", kChat,
       R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
       "messages", "not supported"},
      {"content_part_without_text", kChat,
       R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages",
       "text' must be a string"},
      {"content_part_not_object", kChat, R"({"messages":[{"role":"user","content":["hi"]}]})",
       "messages", "must be an object"},
      {"name_number", kChat, R"({"messages":[{"role":"user","content":"a","name":1}]})", "messages",
       "name' must be a string"},
      {"tool_calls_string", kChat,
       R"({"messages":[{"role":"assistant","content":null,"tool_calls":"x"}]})", "messages",
       "tool_calls' must be an array"},
      {"second_message_bad", kChat,
       R"({"messages":[{"role":"user","content":"a"},{"role":"user"}]})", "messages",
       "messages[1]"},
      {"template_kwargs_number", kChat, chat_with(R"("chat_template_kwargs":5)"),
       "chat_template_kwargs", "object"},
      {"tools_object", kChat, chat_with(R"("tools":{})"), "tools", "must be an array"},
      {"add_generation_prompt_string", kChat, chat_with(R"("add_generation_prompt":"no")"),
       "add_generation_prompt", "boolean"},
  };
}

class BadRequest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequest, GetsA400NamingTheField) {
  const BadCase& c = GetParam();
  OpenAiRequest req;
  const auto err =
      c.kind == kC ? parse_completion_request(c.body, req) : parse_chat_request(c.body, req);
  ASSERT_TRUE(err.has_value()) << c.body;
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->type, "invalid_request_error");
  if (!c.param.empty()) {
    EXPECT_EQ(err->param, c.param) << err->message;
  }
  EXPECT_NE(err->message.find(c.contains), std::string::npos) << err->message;
  // The error body is valid JSON even when the message quotes bad input.
  const auto body = nlohmann::json::parse(api_error_body(*err), nullptr, false);
  ASSERT_FALSE(body.is_discarded());
  EXPECT_TRUE(body["error"]["message"].is_string());
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
}

INSTANTIATE_TEST_SUITE_P(OpenAi, BadRequest, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& i) {
                           return std::string(i.param.name);
                         });

TEST(OpenAiParse, CompletionFields) {
  OpenAiRequest r;
  ASSERT_FALSE(parse_completion_request(
      R"({"model":"qwen","prompt":"Hello","max_tokens":7,"temperature":0,"top_p":0.9,"top_k":-1,"min_p":0.1,
          "repetition_penalty":1.1,"presence_penalty":0.5,"frequency_penalty":-0.5,"seed":-1,"stop":"\n",
          "stop_token_ids":[5,6],"ignore_eos":true,"logprobs":3,"stream":true,"stream_options":{"include_usage":true},
          "priority":"batch","user":"u1","n":1,"best_of":1,"echo":false,"some_future_field":{"x":1},"frequency":null})",
      r));
  EXPECT_EQ(r.kind, ApiKind::kCompletion);
  EXPECT_EQ(r.model, "qwen");
  EXPECT_EQ(r.prompt, "Hello");
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(r.sampling.seed, ~uint64_t{0});  // -1 wraps
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.sampling.stop_token_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_EQ(r.sampling.logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.priority, kPriorityBatch);
  EXPECT_EQ(r.user, "u1");
}

TEST(OpenAiParse, CompletionPromptForms) {
  OpenAiRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[1,2,3]})", r));
  EXPECT_TRUE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[[4,5]]})", r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{4, 5}));
  ASSERT_FALSE(parse_completion_request(R"({"prompt":["only one"]})", r));
  EXPECT_FALSE(r.prompt_is_ids);
  EXPECT_EQ(r.prompt, "only one");
  ASSERT_FALSE(
      parse_completion_request(R"({"prompt":""})", r));  // empty text: refused after tokenizing
  EXPECT_EQ(r.max_tokens, std::nullopt);
  EXPECT_EQ(r.sampling.logprobs, -1);
  EXPECT_EQ(r.priority, std::nullopt);
}

TEST(OpenAiParse, ChatMessagesAreNormalizedInOrder) {
  OpenAiRequest r;
  ASSERT_FALSE(parse_chat_request(
      R"({"messages":[{"role":"system","content":"Be brief."},
                      {"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}],"name":"ann"},
                      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
                      {"role":"tool","content":"42","tool_call_id":"c1"}],
          "max_tokens":5,"max_completion_tokens":9,"logprobs":true,"top_logprobs":2,
          "chat_template_kwargs":{"enable_thinking":false,"zeta":1,"alpha":2},"tools":[{"type":"function","function":{"name":"f"}}],
          "priority":-3})",
      r));
  EXPECT_EQ(r.kind, ApiKind::kChatCompletion);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1]["content"], "one\ntwo");
  EXPECT_EQ(r.messages[1]["name"], "ann");
  EXPECT_EQ(r.messages[2]["content"], "");  // templates test `'</think>' in content`
  EXPECT_TRUE(r.messages[2]["tool_calls"][0]["function"]["arguments"].is_object());
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
  EXPECT_EQ(r.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.sampling.logprobs, 2);
  EXPECT_EQ(r.template_kwargs.dump(),
            R"({"enable_thinking":false,"zeta":1,"alpha":2,"tools":[{"type":"function","function":{"name":"f"}}]})");
  EXPECT_EQ(r.priority, -3);
  EXPECT_TRUE(r.add_generation_prompt);
}

TEST(OpenAiParse, ChatLogprobsOffMeansNone) {
  OpenAiRequest r;
  ASSERT_FALSE(parse_chat_request(chat_with(R"("logprobs":false)"), r));
  EXPECT_EQ(r.sampling.logprobs, -1);
  ASSERT_FALSE(parse_chat_request(chat_with(R"("logprobs":true)"), r));
  EXPECT_EQ(r.sampling.logprobs, 0);
}

TEST(OpenAiParse, PriorityHeader) {
  int32_t p = 99;
  EXPECT_FALSE(parse_priority_header("interactive", p));
  EXPECT_EQ(p, kPriorityInteractive);
  EXPECT_FALSE(parse_priority_header(" 2 ", p));
  EXPECT_EQ(p, 2);
  EXPECT_FALSE(parse_priority_header("-7", p));
  EXPECT_EQ(p, -7);
  for (const char* bad : {"", "urgent", "1.5", "99999", "1000", "-", "0x1"}) {
    auto e = parse_priority_header(bad, p);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->param, "X-Priority");
  }
}

TEST(OpenAiCheckPrompt, LimitsOfTheModel) {
  const ModelLimits lim{100, 1000};
  OpenAiRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x"})", r));
  EXPECT_FALSE(check_prompt({1, 2, 3}, lim, r));
  EXPECT_EQ(r.sampling.max_tokens, 16);  // the completions default
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x"})", r));
  EXPECT_FALSE(check_prompt(std::vector<int32_t>(90, 1), lim, r));
  EXPECT_EQ(r.sampling.max_tokens, 10);  // what the context leaves
  ASSERT_FALSE(parse_chat_request(chat_with(""), r));
  EXPECT_FALSE(check_prompt({1, 2, 3}, lim, r));
  EXPECT_EQ(r.sampling.max_tokens, 97);  // chat: the rest of the context

  struct Row {
    std::vector<int32_t> ids;
    std::string body;
    std::string param, code, contains;
  };
  const std::vector<Row> rows = {
      {{}, R"({"prompt":"x"})", "prompt", "", "empty"},
      {{1, 1000}, R"({"prompt":"x"})", "prompt", "", "outside the vocabulary"},
      {{-1}, R"({"prompt":"x"})", "prompt", "", "outside the vocabulary"},
      {std::vector<int32_t>(100, 1), R"({"prompt":"x"})", "prompt", "context_length_exceeded",
       "no room"},
      {{1, 2},
       R"({"prompt":"x","max_tokens":99})",
       "max_tokens",
       "context_length_exceeded",
       "exceeds the context"},
      {{1, 2},
       R"({"prompt":"x","stop_token_ids":[1000]})",
       "stop_token_ids",
       "",
       "outside the vocabulary"},
  };
  for (const auto& row : rows) {
    ASSERT_FALSE(parse_completion_request(row.body, r));
    auto e = check_prompt(row.ids, lim, r);
    ASSERT_TRUE(e) << row.body;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, row.param);
    EXPECT_EQ(e->code, row.code);
    EXPECT_NE(e->message.find(row.contains), std::string::npos) << e->message;
  }
  ASSERT_FALSE(parse_completion_request(R"({"prompt":"x","max_tokens":98})", r));
  EXPECT_FALSE(check_prompt({1, 2}, lim, r));  // exactly fills the context
  EXPECT_EQ(r.sampling.max_tokens, 98);
}

TEST(OpenAiResponse, CompletionShapes) {
  const ResponseHeader h{ApiKind::kCompletion, "cmpl-1", "m", 1700000000};
  std::vector<TokenLogprob> lps = {
      {"He", "He", -0.5f, {{"He", "He", -0.5f}, {"We", "We", -1.25f}}, 0},
      {"\xEF\xBF\xBD", "\xE2\x82", -2.0f, {}, 2}};
  auto j = nlohmann::json::parse(completion_response(h, "Hello", "length", &lps, Usage{5, 2, 3}));
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], (nlohmann::json{"He", "\xEF\xBF\xBD"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["token_logprobs"], (nlohmann::json{-0.5, -2.0}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0],
            (nlohmann::json{{"He", -0.5}, {"We", -1.25}}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], (nlohmann::json{0, 2}));
  EXPECT_EQ(j["usage"], (nlohmann::json{{"prompt_tokens", 5},
                                        {"completion_tokens", 2},
                                        {"total_tokens", 7},
                                        {"prompt_tokens_details", {{"cached_tokens", 3}}}}));
  j = nlohmann::json::parse(completion_response(h, "x", "stop", nullptr, Usage{}));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
}

TEST(OpenAiResponse, ChatShapes) {
  const ResponseHeader h{ApiKind::kChatCompletion, "chatcmpl-1", "m", 1};
  std::vector<TokenLogprob> lps = {{"Hi", "Hi", -0.25f, {{"Hi", "Hi", -0.25f}}, 0}};
  auto j = nlohmann::json::parse(completion_response(h, "Hi", "stop", &lps, Usage{1, 1, 0}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"], (nlohmann::json{{"role", "assistant"}, {"content", "Hi"}}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0],
            (nlohmann::json{
                {"token", "Hi"},
                {"logprob", -0.25},
                {"bytes", {72, 105}},
                {"top_logprobs", {{{"token", "Hi"}, {"logprob", -0.25}, {"bytes", {72, 105}}}}}}));
}

nlohmann::json chunk_json(const std::string& event) {
  EXPECT_EQ(event.rfind("data: ", 0), 0u);
  EXPECT_EQ(event.substr(event.size() - 2), "\n\n");
  return nlohmann::json::parse(event.substr(6, event.size() - 8));
}

TEST(OpenAiResponse, StreamChunks) {
  const ResponseHeader chat{ApiKind::kChatCompletion, "chatcmpl-1", "m", 1};
  auto j = chunk_json(role_chunk(chat, true));
  EXPECT_EQ(j["object"], "chat.completion.chunk");
  EXPECT_EQ(j["choices"][0]["delta"], (nlohmann::json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(j.contains("usage") && j["usage"].is_null());
  j = chunk_json(delta_chunk(chat, "lo", nullptr, "", false));
  EXPECT_EQ(j["choices"][0]["delta"], (nlohmann::json{{"content", "lo"}}));
  EXPECT_TRUE(j["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(j.contains("usage"));
  j = chunk_json(delta_chunk(chat, "", nullptr, "stop", false));
  EXPECT_EQ(j["choices"][0]["delta"], nlohmann::json::object());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  j = chunk_json(usage_chunk(chat, Usage{3, 4, 0}));
  EXPECT_EQ(j["choices"], nlohmann::json::array());
  EXPECT_EQ(j["usage"]["total_tokens"], 7);

  const ResponseHeader cmpl{ApiKind::kCompletion, "cmpl-1", "m", 1};
  j = chunk_json(delta_chunk(cmpl, "abc", nullptr, "", true));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], "abc");
  EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
  EXPECT_EQ(sse_error(ApiError::internal("boom")),
            "event: error\ndata: "
            "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"param\":null,\"code\":"
            "\"internal_error\"}}\n\n");
}

TEST(OpenAiResponse, IllFormedTextIsRepairedNotThrown) {
  const ResponseHeader h{ApiKind::kCompletion, "cmpl-1", "m", 1};
  auto j = nlohmann::json::parse(completion_response(h, "a\xff", "stop", nullptr, Usage{}));
  EXPECT_EQ(j["choices"][0]["text"], "a\xEF\xBF\xBD");
}

}  // namespace
}  // namespace sy
