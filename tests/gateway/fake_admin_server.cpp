#include "gateway/fake_admin_server.h"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace sy::testing {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

struct FakeAdminServer::Listener {
  explicit Listener(Handler h) : handler(std::move(h)), acceptor(ioc) {}

  void accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket(ioc);
      acceptor.accept(socket, ec);
      if (stopping) return;
      if (ec) continue;
      std::lock_guard lock(mutex);
      connections.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(tcp::socket socket) {
    boost::system::error_code ec;
    boost::beast::flat_buffer buffer;
    bhttp::request<bhttp::string_body> req;
    bhttp::read(socket, buffer, req, ec);
    if (ec) return;
    const FakeReply reply = handler(std::string(req.target()));
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(reply.status), 11};
    res.set(bhttp::field::content_type, reply.content_type);
    res.set(bhttp::field::cache_control, "no-store");
    res.keep_alive(false);
    res.body() = reply.body;
    res.prepare_payload();
    bhttp::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  Handler handler;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::atomic<bool> stopping{false};
  std::thread accept_thread;
  std::mutex mutex;
  std::vector<std::thread> connections;
};

FakeAdminServer::FakeAdminServer(Handler handler) : listener_(std::make_unique<Listener>(std::move(handler))) {
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
  tcp::acceptor& a = listener_->acceptor;
  a.open(ep.protocol());
  a.set_option(net::socket_base::reuse_address(true));
  a.bind(ep);
  a.listen();
  port_ = a.local_endpoint().port();
  listener_->accept_thread = std::thread([l = listener_.get()] { l->accept_loop(); });
}

FakeAdminServer::~FakeAdminServer() {
  listener_->stopping = true;
  // Wake the blocking accept with a connection of our own.
  boost::system::error_code ec;
  tcp::socket wake(listener_->ioc);
  wake.connect({net::ip::make_address("127.0.0.1"), port_}, ec);
  listener_->accept_thread.join();
  std::lock_guard lock(listener_->mutex);
  for (auto& t : listener_->connections) t.join();
}

}  // namespace sy::testing
