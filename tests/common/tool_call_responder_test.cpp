// The shared OpenAI responder with a chat output spec, over HTTP: a model's text arriving
// token by token becomes message.reasoning_content / content / tool_calls (non-streaming)
// or OpenAI-shaped deltas (streaming), finish_reason "tool_calls" after a clean stop with
// calls; the stream, reassembled the way clients do it, equals the whole response.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/http/openai_responder.h"
#include "common/model_source.h"
#include "http_test_client.h"

namespace sy::http {
namespace {

const Tokenizer& tokenizer() {
  static std::unique_ptr<Tokenizer> t = Tokenizer::from_model(*ModelSource::open(std::string(SY_FIXTURES_DIR) + "/qwen3-tiny"));
  return *t;
}

// POST /chat {"stream", "pieces": [token texts], "finish": reason, "tools": bool}: answers
// as a worker would for a model that generated those pieces.
Router scripted_router() {
  Router r;
  r.add(Verb::post, "/chat", [](std::shared_ptr<Exchange> ex) {
    const auto body = nlohmann::json::parse(ex->request().body());
    ResponseHeader h{ApiKind::kChatCompletion, "chatcmpl-test", "m", 1};
    h.output.reasoning = true;
    if (body.value("tools", true)) h.output.tool_format = ToolCallFormat::kHermes;
    const bool stream = body.at("stream");
    OpenAiResponder resp(ex, h, tokenizer(), stream, true, false);
    for (const auto& piece : body.at("pieces")) resp.tokens({ResponderToken{0, piece.get<std::string>(), 0, {}}});
    resp.finish(body.at("finish").get<std::string>(), "", Usage{5, static_cast<int32_t>(body.at("pieces").size()), 0});
  });
  return r;
}

const std::vector<std::string> kPieces = {
    "<think>", "\nThe", " user", " wants", " weather", ".\n", "</think>", "\n\n", "Checking", ".\n", "<tool_call>", "\n{\"",
    "name", "\":", " \"", "get", "_weather", "\",", " \"arguments", "\":", " {\"", "city", "\":", " \"", "Zü", "rich",
    " }{", "\"}}\n", "</tool_call>", "\n", "<tool_call>", "\n{\"name\": \"get_time\", \"arguments\": {}}\n", "</tool_call>"};

nlohmann::json request(bool stream, const std::string& finish = "stop", bool tools = true) {
  return {{"stream", stream}, {"pieces", kPieces}, {"finish", finish}, {"tools", tools}};
}

// The stream's chunks merged into one message, as the openai clients accumulate them;
// also checks each tool-call delta's shape.
nlohmann::json reassemble(const std::string& body, std::string& finish_reason) {
  nlohmann::json msg = {{"content", ""}, {"reasoning_content", ""}, {"tool_calls", nlohmann::json::array()}};
  size_t pos = 0;
  bool done = false;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    const std::string data = body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const auto chunk = nlohmann::json::parse(data);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (chunk["choices"].empty()) continue;  // the usage chunk
    const auto& choice = chunk["choices"][0];
    if (!choice["finish_reason"].is_null()) finish_reason = choice["finish_reason"];
    const auto& d = choice["delta"];
    if (d.contains("content") && d["content"].is_string()) msg["content"] = msg["content"].get<std::string>() + d["content"].get<std::string>();
    if (d.contains("reasoning_content"))
      msg["reasoning_content"] = msg["reasoning_content"].get<std::string>() + d["reasoning_content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    for (const auto& tc : d["tool_calls"]) {
      const size_t i = tc.at("index");
      auto& calls = msg["tool_calls"];
      if (i == calls.size()) {  // a new call: index, id, type and name come first
        EXPECT_TRUE(tc.contains("id") && tc.contains("type")) << tc;
        EXPECT_EQ(tc["function"]["arguments"], "") << tc;
        calls.push_back({{"id", tc["id"]}, {"type", tc["type"]}, {"function", {{"name", tc["function"]["name"]}, {"arguments", ""}}}});
        continue;
      }
      EXPECT_LT(i, calls.size()) << tc;
      EXPECT_FALSE(tc.contains("id")) << tc;
      auto& args = calls[i]["function"]["arguments"];
      args = args.get<std::string>() + tc["function"]["arguments"].get<std::string>();
    }
  }
  EXPECT_TRUE(done) << body;
  return msg;
}

TEST(ToolCallResponder, WholeMessage) {
  TestServer s({}, scripted_router());
  Client c(s.port());
  c.send(post("/chat", request(false).dump()));
  const auto res = c.read();
  ASSERT_EQ(res.result(), Status::ok);
  const auto j = nlohmann::json::parse(res.body());
  const auto& choice = j["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  const auto& m = choice["message"];
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(m["content"], "Checking.");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Zürich }{\"}");
  EXPECT_EQ(nlohmann::json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>())["city"], "Zürich }{");
  EXPECT_EQ(m["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_EQ(m["tool_calls"][1]["function"]["arguments"], "{}");
  EXPECT_NE(m["tool_calls"][0]["id"], m["tool_calls"][1]["id"]);
  EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
}

TEST(ToolCallResponder, StreamReassemblesToTheWholeMessage) {
  TestServer s({}, scripted_router());
  Client c(s.port());
  c.send(post("/chat", request(false).dump()));
  const auto whole = nlohmann::json::parse(c.read().body())["choices"][0]["message"];
  c.send(post("/chat", request(true).dump()));
  const auto res = c.read();
  ASSERT_EQ(res.result(), Status::ok);
  EXPECT_EQ(res.body().find("tool_call>"), std::string::npos) << "markup reached the client";
  EXPECT_EQ(res.body().find("<think>"), std::string::npos);
  std::string finish;
  const auto msg = reassemble(res.body(), finish);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(msg["reasoning_content"], whole["reasoning_content"]);
  EXPECT_EQ(msg["content"], whole["content"]);
  EXPECT_EQ(msg["tool_calls"], whole["tool_calls"]);
}

TEST(ToolCallResponder, LengthStaysLengthAndWithoutToolsTagsAreContent) {
  TestServer s({}, scripted_router());
  Client c(s.port());
  c.send(post("/chat", request(false, "length").dump()));
  EXPECT_EQ(nlohmann::json::parse(c.read().body())["choices"][0]["finish_reason"], "length");
  c.send(post("/chat", request(false, "stop", false).dump()));
  const auto j = nlohmann::json::parse(c.read().body())["choices"][0];
  EXPECT_EQ(j["finish_reason"], "stop");
  EXPECT_FALSE(j["message"].contains("tool_calls"));
  EXPECT_EQ(j["message"]["reasoning_content"], "The user wants weather.");
  EXPECT_NE(j["message"]["content"].get<std::string>().find("<tool_call>"), std::string::npos);
}

}  // namespace
}  // namespace sy::http
