// Tool conversations through the gateway, which renders and tokenizes chat itself for
// routing and builds the OpenAI response from a worker's token stream: the OpenAI replay
// with "content": null is served (streamed and not), bad tool input is a 400 from the
// gateway, and tag text never reaches content.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fixture_util.h"
#include "worker/fixture_edit.h"
#include "gateway/gateway_process.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

using nlohmann::json;
using testing::http_request;
using testing::HttpResult;

const json kTools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
const json kReplay = json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"}])");

TEST(GatewayToolCalls, ReplayServedBadInputRefusedNoMarkupInContent) {
  const std::string config = testing::temp_path("tools.yaml");
  std::ofstream(config) << "model: " << testing::fixture_path("qwen3-tiny-bf16.gguf") << "\n"
                        << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                        << "modes:\n  throughput: {replicas: 1}\n"
                        << "worker: {binary: " << SY_BIN_DIR << "/switchyard-worker, kv_memory_gb: 0.1, max_num_seqs: 4}\n"
                        << "startup: {stagger_s: 0, ready_timeout_s: 60}\n";
  testing::GatewayProcess gw(std::string(SY_BIN_DIR) + "/switchyard-gateway", {"--config", config}, testing::temp_path("tools.log"));
  ASSERT_GT(gw.port(), 0) << gw.log();
  auto post = [&](const json& body) { return http_request(gw.port(), "POST", "/v1/chat/completions", body.dump()); };

  // Refused by the gateway's own parsing, before any worker is ready.
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  HttpResult bad = post({{"messages", user}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "tool_choice");
  bad = post({{"messages", json::parse(R"([{"role": "user", "content": "x"}, {"role": "tool", "content": "1"}])")}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("tool_call_id"), std::string::npos);

  const json replay = {{"messages", kReplay}, {"tools", kTools}, {"max_tokens", 12}, {"temperature", 1.0}, {"seed", 3}};
  HttpResult ok;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && ok.status != 200) {
    ok = post(replay);
    if (ok.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(ok.status, 200) << ok.body;
  const json msg = ok.json()["choices"][0]["message"];
  EXPECT_EQ(msg["role"], "assistant");
  if (msg["content"].is_string()) EXPECT_EQ(msg["content"].get<std::string>().find("tool_call>"), std::string::npos);

  json streamed = replay;
  streamed["stream"] = true;
  const HttpResult s = post(streamed);
  EXPECT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;
  EXPECT_EQ(s.body.find("tool_call>"), std::string::npos) << s.body;
  gw.terminate();
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace sy
