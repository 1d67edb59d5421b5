// A stand-in for the gateway's admin listener: serves the embedded dashboard page and
// canned answers for /admin/status and /admin/events, so tests can render the page
// against fleets the real gateway would take long to build (none, forty replicas) or
// against a failing status endpoint. Loopback, port chosen by the OS, one thread per
// connection, every response closes its connection.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sy::testing {

struct FakeReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class FakeAdminServer {
 public:
  using Handler = std::function<FakeReply(const std::string& target)>;

  explicit FakeAdminServer(Handler handler) : handler_(std::move(handler)), acceptor_(ioc_) {
    namespace net = boost::asio;
    const net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~FakeAdminServer() {
    stopping_ = true;
    // Wake the blocking accept with a connection of our own.
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(ioc_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    accept_thread_.join();
    std::lock_guard lock(mutex_);
    for (auto& t : connections_) t.join();
  }

  uint16_t port() const { return port_; }
  std::string url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(port_) + target;
  }

 private:
  void accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      if (stopping_) return;
      if (ec) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::system::error_code ec;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    const FakeReply reply = handler_(std::string(req.target()));
    http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
    res.set(http::field::content_type, reply.content_type);
    res.set(http::field::cache_control, "no-store");
    res.keep_alive(false);
    res.body() = reply.body;
    res.prepare_payload();
    http::write(socket, res, ec);
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  }

  Handler handler_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mutex_;
  std::vector<std::thread> connections_;
};

}  // namespace sy::testing
