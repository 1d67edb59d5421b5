#include "bench/loadgen/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/version.hpp>
#include <charconv>
#include <stdexcept>

namespace sy::bench {

namespace bhttp = beast::http;  // sy::http is the SSE parser

namespace {

constexpr const char* kUserAgent = "switchyard-bench";
// A stream is read through a fixed buffer, one event at a time, so the total body may be
// large; this only stops a server that never ends a response.
constexpr uint64_t kBodyLimit = uint64_t{1} << 32;
constexpr size_t kErrorBodyBytes = 2048;

ErrorKind kind_of(beast::error_code ec) {
  return ec == beast::error::timeout ? ErrorKind::kTimeout : ErrorKind::kConnect;
}

}  // namespace

Target resolve_target(net::io_context& ioc, const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw std::runtime_error("--url must start with http:// (got '" + url + "')");
  std::string rest = url.substr(scheme.size());
  Target t;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    t.base_path = rest.substr(slash);
    rest.resize(slash);
    while (!t.base_path.empty() && t.base_path.back() == '/') t.base_path.pop_back();
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size()) {
    t.host = rest;
    t.port = "80";
  } else {
    t.host = rest.substr(0, colon);
    t.port = rest.substr(colon + 1);
  }
  if (t.host.size() >= 2 && t.host.front() == '[' && t.host.back() == ']')
    t.host = t.host.substr(1, t.host.size() - 2);
  if (t.host.empty()) throw std::runtime_error("--url has no host: '" + url + "'");
  beast::error_code ec;
  tcp::resolver resolver(ioc);
  t.endpoints = resolver.resolve(t.host, t.port, ec);
  if (ec) throw std::runtime_error("cannot resolve " + t.host + ":" + t.port + ": " + ec.message());
  return t;
}

std::optional<tcp::socket> ConnectionPool::take() {
  while (!idle_.empty()) {
    tcp::socket s = std::move(idle_.back());
    idle_.pop_back();
    if (s.is_open()) return s;
  }
  return std::nullopt;
}

StreamingRequest::StreamingRequest(net::io_context& ioc, const Target& target, ConnectionPool& pool,
                                   const ClientOptions& options, RequestRecord record,
                                   const std::string& path, std::string body, Done done)
    : ioc_(ioc),
      target_(target),
      pool_(pool),
      options_(options),
      record_(std::move(record)),
      done_(std::move(done)),
      sse_(options.max_event_bytes),
      accumulator_(record_) {
  request_.method(bhttp::verb::post);
  request_.target(target.base_path + path);
  request_.version(11);
  request_.set(bhttp::field::host, target.host_header());
  request_.set(bhttp::field::user_agent, kUserAgent);
  request_.set(bhttp::field::content_type, "application/json");
  request_.set(bhttp::field::accept, "text/event-stream");
  request_.keep_alive(options.keep_alive);
  request_.body() = std::move(body);
  request_.prepare_payload();
}

void StreamingRequest::run() {
  // The clock starts before the connection: a user waits for that too.
  record_.issued = Clock::now();
  if (options_.keep_alive) {
    if (auto socket = pool_.take()) {
      stream_.emplace(std::move(*socket));
      record_.reused_connection = true;
      return do_write();
    }
  }
  stream_.emplace(ioc_);
  do_connect();
}

void StreamingRequest::do_connect() {
  stream_->expires_after(options_.timeout);
  stream_->async_connect(target_.endpoints, beast::bind_front_handler(&StreamingRequest::on_connect,
                                                                      shared_from_this()));
}

void StreamingRequest::on_connect(beast::error_code ec, const tcp::endpoint&) {
  if (ec) return fail(ec, "connect");
  // Requests and events are small and latency is what is measured.
  stream_->socket().set_option(tcp::no_delay(true), ec);
  do_write();
}

void StreamingRequest::do_write() {
  stream_->expires_after(options_.timeout);
  bhttp::async_write(*stream_, request_,
                    beast::bind_front_handler(&StreamingRequest::on_write, shared_from_this()));
}

void StreamingRequest::on_write(beast::error_code ec, std::size_t) {
  if (ec) {
    if (retry_on_fresh_connection()) return;
    return fail(ec, "write");
  }
  do_read_header();
}

void StreamingRequest::do_read_header() {
  parser_.emplace();
  parser_->body_limit(kBodyLimit);
  stream_->expires_after(options_.timeout);
  bhttp::async_read_header(
      *stream_, buffer_, *parser_,
      beast::bind_front_handler(&StreamingRequest::on_read_header, shared_from_this()));
}

void StreamingRequest::on_read_header(beast::error_code ec, std::size_t) {
  if (ec) {
    if (retry_on_fresh_connection()) return;
    return fail(ec, "read header");
  }
  const auto& head = parser_->get();
  record_.http_status = static_cast<int>(head.result_int());
  record_.replica = std::string(head["x-switchyard-replica"]);
  const std::string_view attempts = head["x-switchyard-attempts"];
  std::from_chars(attempts.data(), attempts.data() + attempts.size(), record_.attempts);  // stays 0 if absent
  const bool event_stream = head[bhttp::field::content_type].starts_with("text/event-stream");
  streaming_ = record_.http_status == 200 && event_stream;
  if (record_.http_status == 200 && !event_stream)
    record_.fail(ErrorKind::kProtocol, "200 with Content-Type '" +
                                           std::string(head[bhttp::field::content_type]) +
                                           "', not text/event-stream");
  if (parser_->is_done()) return finish_response(Clock::now());  // no body at all
  do_read_body();
}

void StreamingRequest::do_read_body() {
  // Read whatever has arrived into the fixed buffer; the parser removes the chunked
  // framing, so only event-stream bytes come out.
  parser_->get().body().data = body_buf_.data();
  parser_->get().body().size = body_buf_.size();
  stream_->expires_after(options_.timeout);
  bhttp::async_read_some(
      *stream_, buffer_, *parser_,
      beast::bind_front_handler(&StreamingRequest::on_read_body, shared_from_this()));
}

void StreamingRequest::on_read_body(beast::error_code ec, std::size_t) {
  const Clock::time_point now = Clock::now();   // every event in these bytes arrived now
  if (ec == bhttp::error::need_buffer) ec = {};  // the buffer filled up; not an error
  const size_t got = body_buf_.size() - parser_->get().body().size;
  if (got > 0) {
    const std::string_view bytes(body_buf_.data(), got);
    if (streaming_) {
      events_.clear();
      if (!sse_.feed(bytes, events_)) {
        record_.fail(ErrorKind::kProtocol,
                     "an event exceeded " + std::to_string(options_.max_event_bytes) + " bytes");
      }
      for (const sy::http::SseEvent& ev : events_) accumulator_.on_event(ev, now);
      if (!record_.ok()) {
        // An error event or a bad chunk: the rest of this response is not worth reading.
        record_.done = now;
        close();
        return complete();
      }
    } else if (error_body_.size() < kErrorBodyBytes) {
      error_body_.append(bytes.substr(0, kErrorBodyBytes - error_body_.size()));
    }
  }
  if (ec) {
    // A server may close the connection right after [DONE] instead of ending the chunked
    // body; the client has everything it asked for by then.
    if (streaming_ && accumulator_.saw_done()) {
      accumulator_.finish(now, false);
      close();
      return complete();
    }
    // The server closed the stream before [DONE]: a truncated response, reported as one.
    if (streaming_ && (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
                       ec == net::error::eof)) {
      accumulator_.finish(now, sse_.finish());
      close();
      return complete();
    }
    return fail(ec, "read body");
  }
  if (!parser_->is_done()) return do_read_body();
  finish_response(now);
}

void StreamingRequest::finish_response(Clock::time_point now) {
  if (!streaming_) {
    record_.fail(ErrorKind::kHttpStatus,
                 "HTTP " + std::to_string(record_.http_status) + ": " + error_body_);
    record_.done = now;
  } else {
    accumulator_.finish(now, sse_.finish());
  }
  // Reuse the connection only after a clean, complete response with nothing left over.
  if (options_.keep_alive && record_.ok() && parser_->keep_alive() && buffer_.size() == 0) {
    stream_->expires_never();
    pool_.put(stream_->release_socket());
  } else {
    close();
  }
  complete();
}

bool StreamingRequest::retry_on_fresh_connection() {
  // A kept-alive connection may have been closed by the server while idle. If nothing of
  // a response came back, the request never reached it: send it again on a new one.
  if (!record_.reused_connection || retried_ || buffer_.size() > 0 ||
      (parser_ && parser_->got_some()))
    return false;
  retried_ = true;
  record_.reused_connection = false;
  close();
  stream_.emplace(ioc_);
  parser_.reset();
  do_connect();
  return true;
}

void StreamingRequest::fail(beast::error_code ec, const char* what) {
  record_.fail(kind_of(ec), std::string(what) + ": " + ec.message());
  record_.done = Clock::now();
  close();
  complete();
}

void StreamingRequest::close() {
  beast::error_code ignored;
  stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_->socket().close(ignored);
}

void StreamingRequest::complete() {
  if (completed_) return;
  completed_ = true;
  done_(std::move(record_));
}

std::pair<int, std::string> http_get(net::io_context& ioc, const Target& target,
                                     const std::string& path, std::chrono::milliseconds timeout) {
  // Asynchronous so that the stream's timeout applies; run to completion here.
  struct State {
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    bhttp::request<bhttp::empty_body> request;
    bhttp::response<bhttp::string_body> response;
    beast::error_code ec;
    const char* step = "connect";
    explicit State(net::io_context& ioc) : stream(ioc) {}
  };
  auto s = std::make_shared<State>(ioc);
  s->request = {bhttp::verb::get, target.base_path + path, 11};
  s->request.set(bhttp::field::host, target.host_header());
  s->request.set(bhttp::field::user_agent, kUserAgent);
  s->stream.expires_after(timeout);
  s->stream.async_connect(target.endpoints, [s](beast::error_code ec, const tcp::endpoint&) {
    if (ec) return void(s->ec = ec);
    s->step = "write";
    bhttp::async_write(s->stream, s->request, [s](beast::error_code ec, std::size_t) {
      if (ec) return void(s->ec = ec);
      s->step = "read";
      bhttp::async_read(s->stream, s->buffer, s->response,
                       [s](beast::error_code ec, std::size_t) { s->ec = ec; });
    });
  });
  ioc.restart();
  ioc.run();
  if (s->ec)
    throw std::runtime_error("GET " + target.host_header() + target.base_path + path + ": " +
                             s->step + ": " + s->ec.message());
  beast::error_code ignored;
  s->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return {static_cast<int>(s->response.result_int()), s->response.body()};
}

}  // namespace sy::bench
