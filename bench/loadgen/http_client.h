// The load generator's HTTP/1.1 client on Beast: one streaming request per
// StreamingRequest, on a new connection or one kept alive from an earlier request.
// Everything runs on one io_context thread, which is the strand of every connection, so
// no locks are needed and each arrival is timed by the thread that read it.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/loadgen/request_record.h"
#include "bench/loadgen/stream_accumulator.h"
#include "common/http/sse_parser.h"

namespace sy::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

// Where requests go: `http://host:port[/prefix]`.
struct Target {
  std::string host;
  std::string port;
  std::string base_path;  // "" or "/prefix", put before /v1/...
  tcp::resolver::results_type endpoints;
  std::string host_header() const { return host + ":" + port; }
};

// Parses the URL (http only) and resolves the host once, so that requests do not each
// pay for a lookup. Throws std::runtime_error.
Target resolve_target(net::io_context& ioc, const std::string& url);

// Connections whose last response completed cleanly with keep-alive, for the next
// request to reuse.
class ConnectionPool {
 public:
  std::optional<tcp::socket> take();
  void put(tcp::socket socket) { idle_.push_back(std::move(socket)); }
  void clear() { idle_.clear(); }

 private:
  std::vector<tcp::socket> idle_;
};

struct ClientOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};  // per connect, write and read
  bool keep_alive = true;
  size_t max_event_bytes = http::SseParser::kDefaultMaxEventBytes;
};

class StreamingRequest : public std::enable_shared_from_this<StreamingRequest> {
 public:
  using Done = std::function<void(RequestRecord&&)>;

  // `record` carries index, warmup and max_tokens; the rest is filled in. `done` is
  // called exactly once, on the io_context thread.
  StreamingRequest(net::io_context& ioc, const Target& target, ConnectionPool& pool,
                   const ClientOptions& options, RequestRecord record, const std::string& path,
                   std::string body, Done done);

  void run();

 private:
  void do_connect();
  void on_connect(beast::error_code ec, const tcp::endpoint& endpoint);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void do_read_header();
  void on_read_header(beast::error_code ec, std::size_t bytes);
  void do_read_body();
  void on_read_body(beast::error_code ec, std::size_t bytes);
  void finish_response(Clock::time_point now);

  bool retry_on_fresh_connection();
  void fail(beast::error_code ec, const char* what);
  void close();
  void complete();

  net::io_context& ioc_;
  const Target& target_;
  ConnectionPool& pool_;
  ClientOptions options_;
  RequestRecord record_;
  Done done_;

  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  beast::http::request<beast::http::string_body> request_;
  std::optional<beast::http::response_parser<beast::http::buffer_body>> parser_;
  std::array<char, 16384> body_buf_{};
  bool streaming_ = false;  // 200 with text/event-stream: the body goes to the SSE parser
  std::string error_body_;  // the start of a non-stream body, for the error message
  http::SseParser sse_;
  std::vector<http::SseEvent> events_;
  StreamAccumulator accumulator_;
  bool retried_ = false;
  bool completed_ = false;
};

// GET base_path + path; returns {status, body}. For startup queries (/v1/models); throws
// std::runtime_error on connection errors and timeouts.
std::pair<int, std::string> http_get(net::io_context& ioc, const Target& target,
                                     const std::string& path, std::chrono::milliseconds timeout);

}  // namespace sy::bench
