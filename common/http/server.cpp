#include "common/http/server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "common/http/session.h"

namespace sy::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// ---- Router ----

namespace {

// A route path ending in '*' matches any longer path with the part before it as prefix.
bool matches(const std::string& route, std::string_view path) {
  if (route.empty() || route.back() != '*') return route == path;
  const std::string_view prefix(route.data(), route.size() - 1);
  return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
}

}  // namespace

void Router::add(Verb method, std::string path, Handler handler) {
  routes_.push_back(Route{method, std::move(path), std::move(handler)});
}

const Handler* Router::find(Verb method, std::string_view path, Status& status) const {
  status = Status::not_found;
  const Handler* get = nullptr;
  for (const auto& r : routes_) {
    if (!matches(r.path, path)) continue;
    if (r.method == method) return &r.handler;
    if (r.method == Verb::get) get = &r.handler;
    status = Status::method_not_allowed;
  }
  return method == Verb::head ? get : nullptr;
}

// ---- Listener: accepts connections and gives each a session on its own strand ----

class HttpServer::Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(net::io_context& ioc, std::shared_ptr<ServerState> state)
      : ioc_(ioc),
        acceptor_(net::make_strand(ioc)),
        retry_timer_(acceptor_.get_executor()),
        state_(std::move(state)) {}

  std::string listen(uint16_t& port) {
    const auto& o = state_->options;
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
    if (ec || results.empty()) return "cannot resolve " + o.host + ": " + ec.message();
    const tcp::endpoint endpoint = results.begin()->endpoint();
    acceptor_.open(endpoint.protocol(), ec);
    if (ec) return "open: " + ec.message();
    acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (ec) return "set_option: " + ec.message();
    acceptor_.bind(endpoint, ec);
    if (ec) return "bind " + o.host + ":" + std::to_string(o.port) + ": " + ec.message();
    acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return "listen: " + ec.message();
    port = acceptor_.local_endpoint(ec).port();
    return {};
  }

  void run() {
    net::dispatch(acceptor_.get_executor(),
                  beast::bind_front_handler(&Listener::do_accept, shared_from_this()));
  }

  void stop() {
    net::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->acceptor_.close(ec);
      self->retry_timer_.cancel();
    });
  }

 private:
  void do_accept() {
    // Each connection gets its own strand: its handlers never run concurrently.
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;  // stopped
    if (ec) {
      // Out of descriptors and the like: try again shortly rather than spin.
      if (state_->options.log) state_->options.log("accept: " + ec.message());
      retry_timer_.expires_after(std::chrono::milliseconds(100));
      retry_timer_.async_wait([self = shared_from_this()](beast::error_code tec) {
        if (!tec) self->do_accept();
      });
      return;
    }
    if (state_->stats.connections_open.load() >= state_->options.max_connections) {
      ++state_->stats.connections_refused;
      reject(std::move(socket));
    } else {
      std::make_shared<Session>(std::move(socket), state_)->run();
    }
    do_accept();
  }

  // 503 and close, without a session: the answer fits any socket buffer.
  static void reject(tcp::socket socket) {
    static const std::string kResponse = [] {
      const std::string body =
          api_error_body(ApiError::unavailable("too many connections", "too_many_connections"));
      return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: "
             "close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    net::async_write(*s, net::buffer(kResponse), [s](beast::error_code, size_t) {
      beast::error_code ec;
      s->shutdown(tcp::socket::shutdown_send, ec);
      s->close(ec);
    });
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_;
  std::shared_ptr<ServerState> state_;
};

// ---- HttpServer ----

struct HttpServer::State : ServerState {};

HttpServer::HttpServer(net::io_context& ioc, ServerOptions options, Router router)
    : ioc_(ioc), state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  state_->router = std::move(router);
}

HttpServer::~HttpServer() {
  stop();
  close_all();
}

const ServerOptions& HttpServer::options() const {
  return state_->options;
}

std::string HttpServer::start() {
  listener_ = std::make_shared<Listener>(ioc_, state_);
  std::string err = listener_->listen(port_);
  if (!err.empty()) {
    listener_.reset();
    return err;
  }
  listener_->run();
  return {};
}

namespace {

std::vector<std::shared_ptr<Session>> live_sessions(ServerState& s) {
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& [ptr, weak] : s.sessions)
    if (auto p = weak.lock()) out.push_back(std::move(p));
  return out;
}

}  // namespace

void HttpServer::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  if (listener_) listener_->stop();
  for (auto& s : live_sessions(*state_)) s->shutdown(false);
}

void HttpServer::close_all() {
  for (auto& s : live_sessions(*state_)) s->shutdown(true);
}

size_t HttpServer::connections() const {
  return state_->stats.connections_open.load();
}

std::shared_ptr<const ServerStats> HttpServer::stats() const {
  return std::shared_ptr<const ServerStats>(state_, &state_->stats);
}

void HttpServer::serve(tcp::socket socket) {
  // The session needs its own strand, as an accepted socket gets.
  beast::error_code ec;
  const auto protocol = socket.local_endpoint(ec).protocol();
  const auto protocol_of = ec ? tcp::v4() : protocol;
  const auto native = socket.release(ec);
  if (ec) return;
  tcp::socket on_strand(net::make_strand(ioc_));
  on_strand.assign(protocol_of, native, ec);
  if (ec) return;
  std::make_shared<Session>(std::move(on_strand), state_)->run();
}

}  // namespace sy::http
