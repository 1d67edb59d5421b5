// One HTTP request from the gateway to a worker, with the response body delivered in
// pieces as it arrives (SSE streams) or whole. Used for /internal/generate, /ready,
// /metrics and /internal/kv-events. Runs on the executor it is given; every callback
// runs there. cancel() closes the connection at once (the worker sees the client go
// and aborts the request, freeing its KV blocks).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sy::gateway {

struct UpstreamRequest {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string method = "GET";  // GET or POST
  std::string target = "/";
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{2000};
  // Longest silence while waiting for the response or between body pieces.
  std::chrono::milliseconds idle_timeout{30000};
};

struct UpstreamHandlers {
  // Status and the response's Content-Type, once the headers are in.
  std::function<void(int status, std::string_view content_type)> on_headers;
  // A piece of the (de-chunked) body.
  std::function<void(std::string_view data)> on_data;
  // Once, at the end: no error when the body completed; else why it did not.
  std::function<void(boost::beast::error_code ec, std::string what)> on_done;
};

// A call in progress, as its starter sees it.
class CancellableCall {
 public:
  virtual ~CancellableCall() = default;
  // Closes the connection; on_done runs with operation_aborted unless it already ran.
  // Call on the executor.
  virtual void cancel() = 0;
};

class UpstreamCall : public CancellableCall, public std::enable_shared_from_this<UpstreamCall> {
 public:
  static std::shared_ptr<UpstreamCall> start(boost::asio::any_io_executor ex, UpstreamRequest req, UpstreamHandlers h);
  void cancel() override;

  UpstreamCall(boost::asio::any_io_executor ex, UpstreamRequest req, UpstreamHandlers h);

 private:
  void on_resolve(boost::beast::error_code ec, boost::asio::ip::tcp::resolver::results_type results);
  void on_connect(boost::beast::error_code ec);
  void on_write(boost::beast::error_code ec);
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_body(boost::beast::error_code ec);
  void done(boost::beast::error_code ec, std::string what);

  UpstreamRequest req_;
  UpstreamHandlers h_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  boost::beast::http::response_parser<boost::beast::http::buffer_body> parser_;
  char chunk_[16384];
  bool finished_ = false;
};

// A whole-body GET or POST (for /ready, /metrics): on_result(status, body) or an
// error (status 0 and the reason in `body`).
void fetch(boost::asio::any_io_executor ex, UpstreamRequest req, std::function<void(int status, std::string body)> on_result);

}  // namespace sy::gateway
