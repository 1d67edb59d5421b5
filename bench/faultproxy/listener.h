// An accept loop on one address, for the proxy's data and control ports: each accepted
// socket goes to `on_accept`; an accept error (out of descriptors) is retried after
// 100 ms rather than in a spin. The listener must outlive the running of its io_context
// (its handlers refer to it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>

namespace sy::faultproxy {

class Listener {
 public:
  using tcp = boost::asio::ip::tcp;

  Listener(boost::asio::io_context& ioc, std::function<void(tcp::socket)> on_accept);
  ~Listener() { stop(); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds (port 0: the OS chooses) and starts accepting: "" or why it could not.
  std::string listen(const tcp::endpoint& endpoint);
  uint16_t port() const { return port_; }
  void stop();

 private:
  void do_accept();

  boost::asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  std::function<void(tcp::socket)> on_accept_;
  uint16_t port_ = 0;
  bool stopped_ = false;
};

}  // namespace sy::faultproxy
