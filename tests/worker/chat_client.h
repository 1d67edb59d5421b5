// A chat completion against a served worker (or gateway), plain or streamed, with a
// streamed reply reassembled into the message a plain one carries; and a worker process
// started and waited for until ready. Shared by the tool-call server tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "worker_process.h"

namespace sy::testing {

struct ChatReply {
  int status = 0;
  nlohmann::json message;     // {"content", "reasoning_content", "tool_calls"}; on an error status, the error body
  std::string finish_reason;
  std::string error;          // the body of an error status
  std::vector<std::string> content_deltas;  // streamed: each delta's content
};

inline ChatReply chat(uint16_t port, nlohmann::json body, bool stream) {
  using nlohmann::json;
  ChatReply r;
  if (!stream) {
    const HttpResult h = post_json(port, "/v1/chat/completions", body);
    r.status = h.status;
    const json j = h.json();
    if (h.status != 200) {
      r.message = j;
      r.error = h.body;
      return r;
    }
    r.message = j["choices"][0]["message"];
    r.finish_reason = j["choices"][0]["finish_reason"];
    return r;
  }
  body["stream"] = true;
  SseStream s(port, "POST", "/v1/chat/completions", body.dump());
  r.status = s.status();
  r.message = {{"content", ""}, {"tool_calls", json::array()}};
  for (const auto& ev : s.rest()) {
    if (ev.data == "[DONE]") continue;
    const json c = json::parse(ev.data);
    if (c["choices"].empty()) continue;
    const json& ch = c["choices"][0];
    if (!ch["finish_reason"].is_null()) r.finish_reason = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("content") && d["content"].is_string()) {
      r.content_deltas.push_back(d["content"]);
      r.message["content"] = r.message["content"].get<std::string>() + d["content"].get<std::string>();
    }
    if (d.contains("tool_calls"))
      for (const auto& tc : d["tool_calls"]) {
        const size_t i = tc["index"];
        if (i == r.message["tool_calls"].size()) r.message["tool_calls"].push_back(tc);
        else r.message["tool_calls"][i]["function"]["arguments"] =
            r.message["tool_calls"][i]["function"]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
      }
  }
  EXPECT_TRUE(s.complete());
  return r;
}

// `switchyard-worker serve <args>`, once its /ready answers 200 (or after 30 s).
inline std::unique_ptr<WorkerProcess> start_ready_worker(const std::vector<std::string>& args) {
  auto w = std::make_unique<WorkerProcess>(args);
  for (int i = 0; i < 600 && w->port() != 0 && http_request(w->port(), "GET", "/ready").status != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return w;
}

}  // namespace sy::testing
