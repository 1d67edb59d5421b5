// A blocking client for the gateway's streamed completions with a deadline for the
// whole exchange (a stream that trickles forever still ends at the deadline), and what
// a client sees of a stream: its text, whether it ended with `[DONE]`, and errors.
#pragma once

#include <poll.h>

#include <boost/beast/http/parser.hpp>
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
inline TimedResult timed_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                                 std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  TimedResult out;
  auto finish = [&] {
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  };
  net::io_context ioc;
  tcp::socket s(ioc);
  beast::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return finish();
  net::write(s, net::buffer(request_text(method, target, body, "Connection: close\r\n")), ec);
  if (ec) return finish();
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(64 << 20);
  p.eager(true);
  std::string pending;
  char buf[16384];
  while (!p.is_done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{s.native_handle(), POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) == 0) {
      out.timed_out = true;
      return finish();
    }
    const ssize_t n = ::recv(s.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) {
      if (n == 0) p.put_eof(ec);
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    while (!pending.empty() && !p.is_done()) {
      const size_t used = p.put(net::buffer(pending), ec);
      if (ec == bhttp::error::need_more) ec = {};
      if (ec) return finish();
      if (used == 0) break;
      pending.erase(0, used);
    }
  }
  if (!p.is_done()) return finish();
  out.http.status = p.get().result_int();
  out.http.body = p.get().body();
  for (const auto& f : p.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.http.headers[name] = std::string(f.value());
  }
  return finish();
}

// A client that sends one request and then reads as little as it likes before it
// leaves (closes its socket), to test what the server frees when a client goes.
class LeavingClient {
 public:
  LeavingClient(uint16_t port, const std::string& target, const std::string& body) : socket_(ioc_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    if (!ec) net::write(socket_, net::buffer(request_text("POST", target, body, {})), ec);
    sent_ = !ec;
  }
  bool sent() const { return sent_; }
  // Reads until `count` SSE data lines came in all (false at `limit` or the end).
  bool read_events(int count, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buf[16384];
    while (events() < count) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd pfd{socket_.native_handle(), POLLIN, 0};
      if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
      const ssize_t n = ::recv(socket_.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  const std::string& received() const { return received_; }
  void leave() {
    beast::error_code ec;
    socket_.close(ec);
  }

 private:
  int events() const {
    int n = 0;
    for (size_t at = 0; (at = received_.find("data: ", at)) != std::string::npos; at += 6) ++n;
    return n;
  }

  net::io_context ioc_;
  tcp::socket socket_;
  bool sent_ = false;
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
};

inline Streamed parse_stream(const HttpResult& r) {
  Streamed s;
  s.status = r.status;
  s.replica = r.header("x-switchyard-replica");
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
