// A real `switchyard-worker serve` process on a loopback port the OS chose, and a small
// blocking HTTP client for it (plain requests and SSE streams), for integration tests.
// Every read has a receive timeout, so a server that stops answering fails the test
// rather than hanging it. The code is in worker_process.cpp (the sy_test_http library),
// so the many tests that include this header do not each compile Asio and Beast.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http/sse_parser.h"

namespace sy::testing {

// In a forked child: runs argv[0] with `argv`, or exits 127 when it cannot.
[[noreturn]] void exec_program(std::vector<std::string> argv);

class WorkerProcess {
 public:
  // Starts `switchyard-worker serve --port 0 <args>` (or another program that takes its
  // flags, such as switchyard-simworker) and waits for its URL line.
  explicit WorkerProcess(const std::vector<std::string>& args,
                         const std::string& binary = std::string(SY_BIN_DIR) + "/switchyard-worker");
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then the exit status (or -1 if it did not exit within `limit`, or died of a signal).
  int terminate(std::chrono::seconds limit = std::chrono::seconds(30));

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  uint16_t port_ = 0;
  bool exited_ = false;
};

struct HttpResult {
  int status = 0;  // 0: no response
  std::string body;
  std::string content_type;
  std::map<std::string, std::string> headers;  // lower-case names
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// SO_RCVTIMEO on a socket descriptor.
void set_receive_timeout(int fd, int seconds);

// The bytes of an HTTP/1.1 request to 127.0.0.1 (`headers`: extra lines, each ending in CRLF).
std::string request_text(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& headers);

// One request on a fresh connection.
HttpResult http_request(uint16_t port, const std::string& method, const std::string& target,
                        const std::string& body = {}, const std::string& headers = {});

inline HttpResult post_json(uint16_t port, const std::string& target, const nlohmann::json& body) {
  return http_request(port, "POST", target, body.dump());
}

// An SSE response read incrementally.
class SseStream {
 public:
  SseStream(uint16_t port, const std::string& method, const std::string& target, const std::string& body = {});
  ~SseStream();
  int status() const;

  // Reads until at least one more event arrived (into `events`, replacing its content);
  // false once the stream has ended with no event left.
  bool next(std::vector<http::SseEvent>& events);
  // Every event until the end of the stream.
  std::vector<http::SseEvent> rest();
  // True when the response ended as HTTP says it should (the last chunk), not by a
  // dropped connection.
  bool complete() const;
  void close();

 private:
  struct Connection;
  std::unique_ptr<Connection> c_;
};

}  // namespace sy::testing
