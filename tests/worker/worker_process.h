// A real `switchyard-worker serve` process on a loopback port the OS chose, and a small
// blocking HTTP client for it (plain requests and SSE streams), for integration tests.
// Every read has a receive timeout, so a server that stops answering fails the test
// rather than hanging it.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <chrono>
#include <map>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/http/sse_parser.h"

namespace sy::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

class WorkerProcess {
 public:
  // Starts `switchyard-worker serve --port 0 <args>` (or another program that takes its
  // flags, such as switchyard-simworker) and waits for its URL line.
  explicit WorkerProcess(const std::vector<std::string>& args,
                         const std::string& binary = std::string(SY_BIN_DIR) + "/switchyard-worker") {
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (!std::getenv("SY_TEST_WORKER_STDERR")) ::dup2(devnull, 2);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<std::string> all = {binary,
                                      "serve",
                                      "--port",
                                      "0",
                                      "--host",
                                      "127.0.0.1"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = ::fdopen(out[0], "r");
    char line[512];
    while (stdout_ && std::fgets(line, sizeof line, stdout_)) {
      const std::string s(line);
      const size_t p = s.find("http://127.0.0.1:");
      if (p != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(s.substr(p + 17)));
        break;
      }
    }
  }
  ~WorkerProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stdout_) std::fclose(stdout_);
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then the exit status (or -1 if it did not exit within `limit`, or died of a signal).
  int terminate(std::chrono::seconds limit = std::chrono::seconds(30)) {
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

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

inline void set_receive_timeout(tcp::socket& s, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

inline std::string request_text(const std::string& method, const std::string& target,
                                const std::string& body, const std::string& headers) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers;
  if (method == "POST")
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

// One request on a fresh connection.
inline HttpResult http_request(uint16_t port, const std::string& method, const std::string& target,
                               const std::string& body = {}, const std::string& headers = {}) {
  net::io_context ioc;
  tcp::socket s(ioc);
  beast::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {};
  set_receive_timeout(s, 120);
  net::write(s, net::buffer(request_text(method, target, body, headers)), ec);
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(256 << 20);
  bhttp::read(s, buf, p, ec);
  if (ec) return {};
  HttpResult r;
  r.status = p.get().result_int();
  r.body = p.get().body();
  r.content_type = std::string(p.get()[bhttp::field::content_type]);
  for (const auto& f : p.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  return r;
}

inline HttpResult post_json(uint16_t port, const std::string& target, const nlohmann::json& body) {
  return http_request(port, "POST", target, body.dump());
}

// An SSE response read incrementally.
class SseStream {
 public:
  SseStream(uint16_t port, const std::string& method, const std::string& target,
            const std::string& body = {})
      : socket_(ioc_) {
    beast::error_code ec;
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
    if (ec) return;
    set_receive_timeout(socket_, 120);
    net::write(socket_, net::buffer(request_text(method, target, body, {})), ec);
    parser_.body_limit(256 << 20);
    bhttp::read_header(socket_, buf_, parser_, ec);
    if (!ec) status_ = parser_.get().result_int();
  }
  int status() const { return status_; }

  // Reads until at least one more event arrived (into `events`, replacing its content);
  // false once the stream has ended with no event left.
  bool next(std::vector<http::SseEvent>& events) {
    events.clear();
    for (;;) {
      const std::string& body = parser_.get().body();
      if (body.size() > fed_) {
        sse_.feed(std::string_view(body).substr(fed_), events);
        fed_ = body.size();
        if (!events.empty()) return true;
      }
      if (parser_.is_done() || failed_) return false;
      beast::error_code ec;
      bhttp::read_some(socket_, buf_, parser_, ec);
      if (ec) failed_ = true;
    }
  }
  // Every event until the end of the stream.
  std::vector<http::SseEvent> rest() {
    std::vector<http::SseEvent> all, some;
    while (next(some)) all.insert(all.end(), some.begin(), some.end());
    return all;
  }
  // True when the response ended as HTTP says it should (the last chunk), not by a
  // dropped connection.
  bool complete() const { return parser_.is_done(); }
  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buf_;
  bhttp::response_parser<bhttp::string_body> parser_;
  http::SseParser sse_;
  size_t fed_ = 0;
  int status_ = 0;
  bool failed_ = false;
};

}  // namespace sy::testing
