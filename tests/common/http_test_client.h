// Helpers of the HTTP server tests: a server on 127.0.0.1:0 run by two threads, and a
// blocking client with a receive timeout (a server that fails to answer fails the test
// instead of hanging it).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/http/server.h"

namespace sy::http {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// A server on 127.0.0.1:0 with its io_context run by two threads.
class TestServer {
 public:
  TestServer(ServerOptions o, Router r)
      : server_(ioc_, std::move(o), std::move(r)), guard_(net::make_work_guard(ioc_)) {
    const std::string err = server_.start();
    EXPECT_EQ(err, "");
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }
  ~TestServer() {
    server_.stop();
    server_.close_all();
    guard_.reset();
    std::this_thread::sleep_for(20ms);  // let the closes run
    ioc_.stop();
    for (auto& t : threads_) t.join();
  }
  HttpServer& server() { return server_; }
  uint16_t port() const { return server_.port(); }

 private:
  net::io_context ioc_;
  HttpServer server_;
  net::executor_work_guard<net::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

class Client {
 public:
  explicit Client(uint16_t port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    timeval tv{10, 0};  // no test waits this long for a byte
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send(const std::string& bytes) {
    beast::error_code ec;
    net::write(socket_, net::buffer(bytes), ec);
  }
  // The next response; status 0 when none could be read (ec says why).
  bhttp::response<bhttp::string_body> read(beast::error_code& ec) {
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(64 << 20);
    bhttp::read(socket_, buffer_, p, ec);
    if (ec) return {};
    return p.release();
  }
  bhttp::response<bhttp::string_body> read() {
    beast::error_code ec;
    auto r = read(ec);
    EXPECT_FALSE(ec) << ec.message();
    return r;
  }
  // Reads until the server closes; false when it did not within the receive timeout.
  bool closed_by_server() {
    char buf[4096];
    for (;;) {
      beast::error_code ec;
      socket_.read_some(net::buffer(buf), ec);
      if (ec == net::error::eof || ec == net::error::connection_reset) return true;
      if (ec) return false;  // timeout (EAGAIN) or another error
    }
  }
  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
  tcp::socket& socket() { return socket_; }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

inline std::string get(const std::string& path, const std::string& extra = {}) {
  return "GET " + path + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

inline std::string post(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline nlohmann::json error_of(const bhttp::response<bhttp::string_body>& r) {
  auto j = nlohmann::json::parse(r.body(), nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << r.body();
  return j.is_object() && j.contains("error") ? j["error"] : nlohmann::json();
}

inline Router hello_router() {
  Router r;
  r.add(Verb::get, "/hello",
        [](std::shared_ptr<Exchange> ex) { ex->respond(Status::ok, "text/plain", "hello"); });
  r.add(Verb::post, "/echo", [](std::shared_ptr<Exchange> ex) {
    ex->respond(Status::ok, "text/plain", ex->request().body());
  });
  return r;
}

// Handlers whose work finishes on threads of their own, joined by the test.
struct Workers {
  std::mutex mu;
  std::vector<std::thread> threads;
  void run(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(mu);
    threads.emplace_back(std::move(f));
  }
  ~Workers() {
    for (auto& t : threads) t.join();
  }
};

}  // namespace sy::http
