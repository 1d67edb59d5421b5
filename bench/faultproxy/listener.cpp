#include "bench/faultproxy/listener.h"

namespace sy::faultproxy {

namespace net = boost::asio;
using boost::system::error_code;

Listener::Listener(net::io_context& ioc, std::function<void(tcp::socket)> on_accept)
    : ioc_(ioc), acceptor_(ioc), retry_timer_(ioc), on_accept_(std::move(on_accept)) {}

std::string Listener::listen(const tcp::endpoint& endpoint) {
  error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return ec.message();
  port_ = acceptor_.local_endpoint(ec).port();
  do_accept();
  return {};
}

void Listener::do_accept() {
  acceptor_.async_accept(ioc_, [this](error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || stopped_) return;
    if (ec) {
      retry_timer_.expires_after(std::chrono::milliseconds(100));
      retry_timer_.async_wait([this](error_code tec) {
        if (!tec) do_accept();
      });
      return;
    }
    on_accept_(std::move(socket));
    do_accept();
  });
}

void Listener::stop() {
  stopped_ = true;
  error_code ec;
  acceptor_.close(ec);
  retry_timer_.cancel();
}

}  // namespace sy::faultproxy
