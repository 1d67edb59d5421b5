// Internal to common/http: one connection's session and the state it shares with the
// server. Everything a Session does runs on its strand (the socket's executor); the
// post_* entry points are the only ones other threads call.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/http/server.h"

namespace sy::http {

// What the server and its sessions share; sessions keep it alive past the server.
struct ServerState {
  ServerOptions options;
  Router router;
  ServerStats stats;
  std::mutex mu;
  bool stopping = false;                                          // guarded by mu
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mu
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

 public:
  Session(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state);
  ~Session();

  void run();
  // Any thread: a stopping server closes idle connections at once and the others after
  // their current response; `force` closes now.
  void shutdown(bool force);

  boost::asio::any_io_executor executor() { return stream_.get_executor(); }

  // From Exchange, any thread.
  void post_respond(uint64_t seq, std::shared_ptr<Response> response);
  void post_start_stream(uint64_t seq, Status status, std::string content_type, Headers headers);
  bool post_write(uint64_t seq, std::string data);
  void post_finish(uint64_t seq);
  void post_on_cancel(uint64_t seq, std::function<void()> on_cancel);

 private:
  void do_read();
  void on_first_bytes(boost::beast::error_code ec, size_t n);
  void do_read_header();
  void on_read_header(boost::beast::error_code ec, size_t n);
  void do_read_body();
  void on_read(boost::beast::error_code ec, size_t n);
  void handle_request(Request request);
  // The answer to a request the parser refused (431, 413, 400), counted; none for other
  // errors (timeouts, the client closing).
  std::optional<ApiError> read_refusal(boost::beast::error_code ec);

  void start_watch();
  void on_watch(uint64_t gen, boost::beast::error_code ec);
  void stop_watch();
  void client_gone();

  void do_respond(uint64_t seq, std::shared_ptr<Response> response);
  void on_write_response(boost::beast::error_code ec, size_t n);
  void do_start_stream(uint64_t seq, Status status, std::string content_type, Headers headers);
  void on_write_stream_header(boost::beast::error_code ec, size_t n);
  void do_write(uint64_t seq, std::string data);
  void do_write_pending();
  void on_write_chunk(boost::beast::error_code ec, size_t n);
  void on_write_last(boost::beast::error_code ec, size_t n);
  void do_finish(uint64_t seq);
  void finish_request();

  // A request we refuse before any handler sees it (400, 404, 413, 431): the error body,
  // then a close that first drains what the client is still sending (so that closing
  // with unread bytes does not reset the connection before the client reads the error).
  void reject(const ApiError& error, bool close);
  void on_write_reject(bool close, boost::beast::error_code ec, size_t n);
  void do_linger_close();
  void on_linger(boost::beast::error_code ec, size_t n);
  void do_close();
  void close_socket();
  void fail(boost::beast::error_code ec, const char* what);

  // What the stream's timer guards now, so that a timeout is counted where it happened.
  enum class Phase { kIdle, kHeader, kBody, kWrite, kLinger };
  void arm(Phase phase, std::chrono::steady_clock::duration timeout);
  void count_timeout();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::shared_ptr<ServerState> state_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;

  bool first_request_ = true;
  Phase phase_ = Phase::kHeader;
  // When the headers of the request being read must be complete: set once per request,
  // so that trickling bytes do not extend it.
  std::chrono::steady_clock::time_point header_deadline_;
  bool in_request_ = false;  // from a complete request until its response is written
  bool keep_alive_ = false;
  bool http10_ = false;  // HTTP/1.0 client: no chunked encoding, close at the end
  bool head_ = false;    // a HEAD request: its answer has headers only
  unsigned version_ = 11;
  bool stopping_ = false;
  bool closed_ = false;
  bool client_gone_ = false;
  std::atomic<bool> gone_{false};  // client_gone_ for other threads (write())
  uint64_t seq_ = 0;               // the current request's number on this connection
  std::weak_ptr<Exchange> exchange_;
  std::function<void()> on_cancel_;

  bool watching_ = false;
  uint64_t watch_gen_ = 0;

  enum class Out { kNone, kPlain, kStream } out_ = Out::kNone;
  std::shared_ptr<Response> plain_;
  std::unique_ptr<bhttp::response<bhttp::empty_body>> stream_header_;
  std::unique_ptr<bhttp::response_serializer<bhttp::empty_body>> stream_sr_;
  bool header_written_ = false;
  bool writing_ = false;
  bool finish_requested_ = false;
  std::string pending_;                  // streamed bytes not yet handed to the socket
  std::string inflight_;                 // bytes of the write in progress
  std::atomic<size_t> queued_bytes_{0};  // pending_ + inflight_ + posted, for the bound
  size_t linger_bytes_ = 0;
};

}  // namespace sy::http
