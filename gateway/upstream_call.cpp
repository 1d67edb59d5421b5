#include "gateway/upstream_call.h"

#include <boost/asio/post.hpp>

namespace sy::gateway {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

std::shared_ptr<UpstreamCall> UpstreamCall::start(boost::asio::any_io_executor ex, UpstreamRequest req, UpstreamHandlers h) {
  auto call = std::make_shared<UpstreamCall>(ex, std::move(req), std::move(h));
  call->resolver_.async_resolve(call->req_.host, std::to_string(call->req_.port),
                                [self = call](beast::error_code ec, tcp::resolver::results_type r) { self->on_resolve(ec, std::move(r)); });
  return call;
}

UpstreamCall::UpstreamCall(boost::asio::any_io_executor ex, UpstreamRequest req, UpstreamHandlers h)
    : req_(std::move(req)), h_(std::move(h)), resolver_(ex), stream_(ex) {
  parser_.body_limit(boost::none);  // streams are unbounded; the caller cancels
  parser_.header_limit(64 * 1024);
}

void UpstreamCall::cancel() {
  if (finished_) return;
  resolver_.cancel();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  done(boost::asio::error::operation_aborted, "cancelled");
}

void UpstreamCall::done(beast::error_code ec, std::string what) {
  if (finished_) return;
  finished_ = true;
  if (ec) {
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }
  if (h_.on_done) h_.on_done(ec, std::move(what));
  // Drop the handlers (they may hold what holds this call) once no callback of theirs
  // is running: done() can be reached from inside on_data.
  boost::asio::post(stream_.get_executor(), [self = shared_from_this()] { self->h_ = {}; });
}

void UpstreamCall::on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
  if (finished_) return;
  if (ec) return done(ec, "resolve " + req_.host + ": " + ec.message());
  stream_.expires_after(req_.connect_timeout);
  stream_.async_connect(results, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) { self->on_connect(ec); });
}

void UpstreamCall::on_connect(beast::error_code ec) {
  if (finished_) return;
  if (ec) return done(ec, "connect " + req_.host + ":" + std::to_string(req_.port) + ": " + ec.message());
  stream_.socket().set_option(tcp::no_delay(true), ec);
  request_.method(req_.method == "POST" ? http::verb::post : http::verb::get);
  request_.target(req_.target);
  request_.version(11);
  request_.set(http::field::host, req_.host + ":" + std::to_string(req_.port));
  request_.set(http::field::user_agent, "switchyard-gateway");
  for (const auto& [k, v] : req_.headers) request_.set(k, v);
  if (req_.method == "POST") {
    request_.set(http::field::content_type, req_.content_type);
    request_.body() = req_.body;
  }
  request_.prepare_payload();
  stream_.expires_after(req_.idle_timeout);
  http::async_write(stream_, request_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
}

void UpstreamCall::on_write(beast::error_code ec) {
  if (finished_) return;
  if (ec) return done(ec, "send: " + ec.message());
  stream_.expires_after(req_.idle_timeout);
  http::async_read_header(stream_, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void UpstreamCall::on_header(beast::error_code ec) {
  if (finished_) return;
  if (ec) return done(ec, "response header: " + ec.message());
  const auto& res = parser_.get();
  if (h_.on_headers) h_.on_headers(static_cast<int>(res.result_int()), res[http::field::content_type]);
  if (finished_) return;  // the handler may have cancelled
  read_body();
}

void UpstreamCall::read_body() {
  if (parser_.is_done()) return done({}, "");
  parser_.get().body().data = chunk_;
  parser_.get().body().size = sizeof chunk_;
  stream_.expires_after(req_.idle_timeout);
  // read_some, not read: a stream must hand over each piece as it arrives, not when the
  // buffer fills.
  http::async_read_some(stream_, buffer_, parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
}

void UpstreamCall::on_body(beast::error_code ec) {
  if (finished_) return;
  // need_buffer only says the chunk buffer is full: hand it over and read on.
  if (ec == http::error::need_buffer) ec = {};
  const size_t got = sizeof chunk_ - parser_.get().body().size;
  if (got > 0 && h_.on_data) h_.on_data(std::string_view(chunk_, got));
  if (finished_) return;
  if (ec) return done(ec, "response body: " + ec.message());
  read_body();
}

void fetch(boost::asio::any_io_executor ex, UpstreamRequest req, std::function<void(int status, std::string body)> on_result) {
  struct State {
    int status = 0;
    std::string body;
  };
  auto st = std::make_shared<State>();
  constexpr size_t kMaxBody = 16 * 1024 * 1024;
  UpstreamHandlers h;
  h.on_headers = [st](int status, std::string_view) { st->status = status; };
  h.on_data = [st](std::string_view d) {
    if (st->body.size() + d.size() <= kMaxBody) st->body.append(d);
  };
  h.on_done = [st, cb = std::move(on_result)](beast::error_code ec, std::string what) {
    if (ec) cb(0, std::move(what));
    else cb(st->status, std::move(st->body));
  };
  UpstreamCall::start(std::move(ex), std::move(req), std::move(h));
}

}  // namespace sy::gateway
