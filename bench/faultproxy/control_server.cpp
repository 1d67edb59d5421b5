#include "bench/faultproxy/control_server.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <optional>

#include "common/protocol/api_error.h"

namespace sy::faultproxy {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using boost::system::error_code;

namespace {

constexpr auto kTimeout = std::chrono::seconds(30);
constexpr size_t kHeaderLimit = 16 * 1024;
constexpr size_t kBodyLimit = 1 << 20;

class ControlSession : public std::enable_shared_from_this<ControlSession> {
 public:
  ControlSession(net::ip::tcp::socket socket, std::shared_ptr<ControlServer::Handler> handler)
      : stream_(std::move(socket)), handler_(std::move(handler)) {}

  void do_read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kTimeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof) return close();
    if (ec == bhttp::error::body_limit)
      return reject(ApiError::too_large("request body over 1 MiB"));
    if (ec == bhttp::error::header_limit)
      return reject(ApiError{431, "invalid_request_error", "request headers over 16 KiB", {}, {}});
    if (ec == beast::error::timeout || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return close();
    if (ec) return reject(ApiError::bad_request("malformed HTTP request: " + ec.message()));
    const ControlRequest req = parser_->release();
    write((*handler_)(req), req.keep_alive());
  }

  // A request that could not be read: answered, then the connection closes (what
  // follows it on the wire cannot be framed).
  void reject(const ApiError& e) {
    ControlRequest req;
    req.keep_alive(false);
    write(json_response(req, static_cast<unsigned>(e.status), api_error_body(e)), false);
  }

  void write(ControlResponse res, bool keep_alive) {
    res.keep_alive(keep_alive);
    res.prepare_payload();
    response_ = std::make_shared<ControlResponse>(std::move(res));
    stream_.expires_after(kTimeout);
    bhttp::async_write(stream_, *response_,
                       [self = shared_from_this(), keep_alive](error_code ec, size_t) {
                         if (ec || !keep_alive) return self->close();
                         self->do_read();
                       });
  }

  void close() {
    error_code ec;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ControlResponse> response_;
  std::shared_ptr<ControlServer::Handler> handler_;
};

}  // namespace

ControlResponse json_response(const ControlRequest& req, unsigned status, std::string body) {
  ControlResponse res{static_cast<bhttp::status>(status), req.version()};
  res.set(bhttp::field::server, "switchyard-faultproxy");
  res.set(bhttp::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

ControlServer::ControlServer(net::io_context& ioc, Handler handler)
    : handler_(std::make_shared<Handler>(std::move(handler))),
      listener_(ioc, [this](tcp::socket socket) {
        std::make_shared<ControlSession>(std::move(socket), handler_)->do_read();
      }) {}

std::string ControlServer::listen(const tcp::endpoint& endpoint) {
  return listener_.listen(endpoint);
}

}  // namespace sy::faultproxy
