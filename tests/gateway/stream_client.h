// A blocking client for the gateway's streamed completions with a deadline for the
// whole exchange (a stream that trickles forever still ends at the deadline), and what
// a client sees of a stream: its text, whether it ended with `[DONE]`, and errors. The
// clients are in stream_client.cpp (the sy_test_http library).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "worker/worker_process.h"  // HttpResult, request_text

namespace sy::testing {

struct TimedResult {
  HttpResult http;  // status 0: no complete response
  bool timed_out = false;
  double seconds = 0;  // from connect to the end of the response (or the deadline)
};

// One request on a fresh connection (`Connection: close`), given up at `deadline`.
TimedResult timed_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                          std::chrono::steady_clock::time_point deadline);

// A client that sends one request and then reads as little as it likes before it
// leaves (closes its socket), to test what the server frees when a client goes.
class LeavingClient {
 public:
  LeavingClient(uint16_t port, const std::string& target, const std::string& body);
  ~LeavingClient();
  LeavingClient(const LeavingClient&) = delete;
  LeavingClient& operator=(const LeavingClient&) = delete;
  bool sent() const { return fd_ >= 0; }
  // Reads until `count` SSE data lines came in all (false at `limit` or the end).
  bool read_events(int count, std::chrono::milliseconds limit);
  const std::string& received() const { return received_; }
  void leave();

 private:
  int events() const;

  int fd_ = -1;
  std::string received_;
};

// What a client saw of one streamed completion.
struct Streamed {
  int status = 0;
  std::string text;
  bool done = false;   // ended with data: [DONE]
  bool error = false;  // an error event or an error chunk
  bool timed_out = false;
  double seconds = 0;
  std::string replica;  // x-switchyard-replica
  std::string attempts;  // x-switchyard-attempts
};

inline Streamed parse_stream(const HttpResult& r) {
  Streamed s;
  s.status = r.status;
  s.replica = r.header("x-switchyard-replica");
  s.attempts = r.header("x-switchyard-attempts");
  size_t pos = 0;
  while (pos < r.body.size()) {
    size_t end = r.body.find('\n', pos);
    if (end == std::string::npos) end = r.body.size();
    const std::string line = r.body.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("event: error", 0) == 0) s.error = true;
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("error")) s.error = true;
    if (j.contains("choices") && !j["choices"].empty() && j["choices"][0].contains("text"))
      s.text += j["choices"][0]["text"].get<std::string>();
  }
  return s;
}

inline Streamed parse_stream(const TimedResult& r) {
  Streamed s = parse_stream(r.http);
  s.timed_out = r.timed_out;
  s.seconds = r.seconds;
  return s;
}

// A streamed completion; `seeded`: temperature 0.8 with seed 1000 + i, else greedy.
inline nlohmann::json request_body(int i, bool seeded, int max_tokens) {
  nlohmann::json b = {{"prompt", "Tell me about harbours, request " + std::to_string(i)},
                      {"max_tokens", max_tokens},
                      {"stream", true},
                      {"temperature", seeded ? 0.8 : 0.0}};
  if (seeded) b["seed"] = 1000 + i;
  return b;
}

}  // namespace sy::testing
