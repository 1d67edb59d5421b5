#include "common/http/session.h"

#include "common/http/request_screen.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sy::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr size_t kReadChunk = 4096;
constexpr size_t kLingerMaxBytes = 1 << 20;
constexpr std::chrono::seconds kLingerTime{2};
const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

// Errors that only mean "the peer went away or we closed": not worth a log line.
bool quiet_error(beast::error_code ec) {
  return ec == net::error::eof || ec == net::error::operation_aborted ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == beast::error::timeout || ec == bhttp::error::end_of_stream ||
         ec == net::error::not_connected || ec == net::error::bad_descriptor;
}

// The parser refused the bytes (not a timeout, not the peer closing).
bool is_syntax_error(beast::error_code ec) {
  return ec && ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

bool is_event_stream(const std::string& content_type) {
  return content_type.rfind("text/event-stream", 0) == 0;
}

}  // namespace

Session::Session(tcp::socket socket, std::shared_ptr<ServerState> state)
    : stream_(std::move(socket)), state_(std::move(state)) {
  state_->stats.connections_open.fetch_add(1);
  state_->stats.connections_accepted.fetch_add(1);
}

Session::~Session() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.erase(this);
  }
  state_->stats.connections_open.fetch_sub(1);
}

void Session::run() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions[this] = weak_from_this();
    stopping_ = state_->stopping;
  }
  beast::error_code ec;
  // Tokens are small writes that must leave at once, not wait for Nagle.
  stream_.socket().set_option(tcp::no_delay(true), ec);
  if (state_->options.send_buffer_bytes > 0)
    stream_.socket().set_option(net::socket_base::send_buffer_size(static_cast<int>(state_->options.send_buffer_bytes)), ec);
  // The watch reads whatever is available without blocking (see on_watch).
  stream_.socket().non_blocking(true, ec);
  net::dispatch(stream_.get_executor(),
                beast::bind_front_handler(&Session::do_read, shared_from_this()));
}

void Session::shutdown(bool force) {
  net::post(stream_.get_executor(), [self = shared_from_this(), force] {
    self->stopping_ = true;
    if (force && self->in_request_) return self->client_gone();
    if (force || !self->in_request_) self->close_socket();
  });
}

void Session::fail(beast::error_code ec, const char* what) {
  if (ec == beast::error::timeout) count_timeout();
  if (!quiet_error(ec) && state_->options.log)
    state_->options.log(std::string(what) + ": " + ec.message());
  if (in_request_) return client_gone();
  close_socket();
}

void Session::arm(Phase phase, std::chrono::steady_clock::duration timeout) {
  phase_ = phase;
  stream_.expires_after(timeout);
}

void Session::count_timeout() {
  ServerStats& s = state_->stats;
  switch (phase_) {
    case Phase::kIdle: ++s.idle_timeouts; break;
    case Phase::kHeader: ++s.header_timeouts; break;
    case Phase::kBody: ++s.body_timeouts; break;
    case Phase::kWrite: ++s.write_timeouts; break;
    case Phase::kLinger: break;
  }
}

// ---- reading a request ----

void Session::do_read() {
  if (closed_) return;
  if (stopping_) return do_close();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(state_->options.header_limit));
  parser_->body_limit(state_->options.body_limit);
  // The first request's headers are due header_timeout after the connection opened;
  // a later request's, header_timeout after its first byte (the idle timeout covers
  // the wait for that byte).
  const auto now = std::chrono::steady_clock::now();
  if (first_request_ || buffer_.size() > 0) header_deadline_ = now + state_->options.header_timeout;
  if (buffer_.size() > 0) return do_read_header();
  if (first_request_) {
    phase_ = Phase::kHeader;
    stream_.expires_at(header_deadline_);
  } else {
    arm(Phase::kIdle, state_->options.idle_timeout);
  }
  stream_.async_read_some(buffer_.prepare(kReadChunk),
                          beast::bind_front_handler(&Session::on_first_bytes, shared_from_this()));
}

void Session::on_first_bytes(beast::error_code ec, size_t n) {
  if (ec) return fail(ec, "read");  // idle timeout or the client closed: just close
  buffer_.commit(n);
  if (!first_request_) header_deadline_ = std::chrono::steady_clock::now() + state_->options.header_timeout;
  do_read_header();
}

void Session::do_read_header() {
  // One deadline for all the header bytes: a client trickling them cannot extend it.
  phase_ = Phase::kHeader;
  stream_.expires_at(header_deadline_);
  // The header block is read whole before the parser sees it, to refuse folded lines
  // (Beast would join them). Past the header limit the parser answers 431.
  const auto data = buffer_.data();
  const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
  switch (scan_header_block(bytes)) {
    case HeaderBlock::kFolded:
      first_request_ = false;
      head_ = bytes.rfind("HEAD ", 0) == 0;
      ++state_->stats.rejected_400;
      return reject(ApiError::bad_request("malformed HTTP request: folded header line (obs-fold)"), true);
    case HeaderBlock::kIncomplete:
      if (bytes.size() <= state_->options.header_limit)
        return stream_.async_read_some(buffer_.prepare(kReadChunk), [self = shared_from_this()](beast::error_code ec, size_t n) {
          if (ec) return self->on_read_header(ec, 0);
          self->buffer_.commit(n);
          self->do_read_header();
        });
      break;
    case HeaderBlock::kComplete: break;
  }
  bhttp::async_read_header(stream_, buffer_, *parser_,
                           beast::bind_front_handler(&Session::on_read_header, shared_from_this()));
}

std::optional<ApiError> Session::read_refusal(beast::error_code ec) {
  ServerStats& s = state_->stats;
  // A refused HEAD request still gets no body (once its method is known).
  head_ = parser_->is_header_done() && parser_->get().method() == bhttp::verb::head;
  if (ec == bhttp::error::header_limit) {
    ++s.rejected_431;
    return ApiError{431, "invalid_request_error",
                    "request headers exceed " + std::to_string(state_->options.header_limit) + " bytes", {},
                    "headers_too_large"};
  }
  if (ec == bhttp::error::body_limit) {  // a Content-Length or a chunked body above the limit
    ++s.rejected_413;
    return ApiError::too_large("request body exceeds " + std::to_string(state_->options.body_limit) + " bytes");
  }
  if (is_syntax_error(ec)) {
    ++s.rejected_400;
    return ApiError::bad_request("malformed HTTP request: " + ec.message());
  }
  return std::nullopt;
}

void Session::on_read_header(beast::error_code ec, size_t) {
  first_request_ = false;
  if (auto refusal = read_refusal(ec)) return reject(*refusal, true);
  if (ec) return fail(ec, "read header");
  head_ = parser_->get().method() == bhttp::verb::head;
  const auto& req = parser_->get();
  if (auto refusal = unsupported_transfer_coding(req)) {
    ++state_->stats.rejected_501;
    return reject(*refusal, true);
  }
  if (beast::iequals(req[bhttp::field::expect], "100-continue") && !parser_->is_done()) {
    // curl and others wait for this before sending a body.
    arm(Phase::kWrite, state_->options.write_timeout);
    return net::async_write(stream_, net::buffer(kContinue, sizeof kContinue - 1),
                            [self = shared_from_this()](beast::error_code wec, size_t) {
                              if (wec) return self->fail(wec, "write 100-continue");
                              self->do_read_body();
                            });
  }
  do_read_body();
}

void Session::do_read_body() {
  if (parser_->is_done()) return on_read({}, 0);
  arm(Phase::kBody, state_->options.body_timeout);
  bhttp::async_read(stream_, buffer_, *parser_,
                    beast::bind_front_handler(&Session::on_read, shared_from_this()));
}

void Session::on_read(beast::error_code ec, size_t) {
  if (auto refusal = read_refusal(ec)) return reject(*refusal, true);
  if (ec) return fail(ec, "read body");
  // A handler may take minutes; the watch, not a timer, notices a dead client.
  stream_.expires_never();
  handle_request(parser_->release());
}

void Session::handle_request(Request request) {
  in_request_ = true;
  ++seq_;
  out_ = Out::kNone;
  header_written_ = false;
  finish_requested_ = false;
  pending_.clear();
  version_ = request.version();
  http10_ = version_ < 11;
  keep_alive_ = request.keep_alive() && !stopping_;

  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  Status status = Status::not_found;
  const Handler* handler = state_->router.find(request.method(), path, status);
  if (!handler) {
    in_request_ = false;
    ApiError e =
        status == Status::method_not_allowed
            ? ApiError{405, "invalid_request_error", "method not allowed", {}, "method_not_allowed"}
            : ApiError{404,
                       "invalid_request_error",
                       "no route for " + echo_input(path),
                       {},
                       "not_found"};
    return reject(e, !keep_alive_);
  }
  auto exchange = std::make_shared<Exchange>(shared_from_this(), seq_, std::move(request));
  exchange_ = exchange;
  start_watch();
  (*handler)(std::move(exchange));
}

// ---- noticing a client that goes away ----

void Session::start_watch() {
  if (watching_ || client_gone_ || closed_ || !in_request_) return;
  if (buffer_.size() >= state_->options.max_read_ahead) return;  // resumes with the next request
  watching_ = true;
  const uint64_t gen = ++watch_gen_;
  stream_.socket().async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this(), gen](beast::error_code ec) { self->on_watch(gen, ec); });
}

void Session::on_watch(uint64_t gen, beast::error_code ec) {
  if (gen != watch_gen_ || !watching_) return;  // cancelled: the response is complete
  watching_ = false;
  if (ec) return client_gone();
  // Readable: EOF, a reset, or bytes of a pipelined request. The socket is in
  // non-blocking mode, so this takes what is there.
  const size_t n = stream_.socket().read_some(buffer_.prepare(kReadChunk), ec);
  if (ec == net::error::would_block || ec == net::error::try_again) return start_watch();
  if (ec) return client_gone();
  buffer_.commit(n);
  start_watch();
}

void Session::stop_watch() {
  if (!watching_) return;
  watching_ = false;
  ++watch_gen_;
  beast::error_code ec;
  stream_.socket().cancel(ec);  // no other operation is pending on the socket now
}

void Session::client_gone() {
  if (client_gone_) return;
  client_gone_ = true;
  gone_.store(true);
  watching_ = false;
  if (auto ex = exchange_.lock()) ex->cancelled_.store(true);
  auto cb = std::move(on_cancel_);
  on_cancel_ = nullptr;
  close_socket();
  if (in_request_ && cb) cb();
}

// ---- plain responses ----

void Session::post_respond(uint64_t seq, std::shared_ptr<Response> response) {
  net::post(stream_.get_executor(),
            [self = shared_from_this(), seq, r = std::move(response)]() mutable {
              self->do_respond(seq, std::move(r));
            });
}

void Session::do_respond(uint64_t seq, std::shared_ptr<Response> response) {
  if (seq != seq_ || !in_request_ || out_ != Out::kNone) return;
  out_ = Out::kPlain;
  if (client_gone_ || closed_) return finish_request();
  keep_alive_ = keep_alive_ && !stopping_ && response->keep_alive();
  response->version(version_);
  response->set(bhttp::field::server, state_->options.server_name);
  response->keep_alive(keep_alive_);
  response->prepare_payload();
  if (head_) response->body().clear();  // Content-Length stays: the size a GET would get
  plain_ = std::move(response);
  arm(Phase::kWrite, state_->options.write_timeout);
  bhttp::async_write(stream_, *plain_,
                     beast::bind_front_handler(&Session::on_write_response, shared_from_this()));
}

void Session::on_write_response(beast::error_code ec, size_t) {
  plain_.reset();
  if (ec) return fail(ec, "write");
  finish_request();
}

// ---- streamed responses ----

void Session::post_start_stream(uint64_t seq, Status status, std::string content_type, Headers headers) {
  net::post(stream_.get_executor(),
            [self = shared_from_this(), seq, status, ct = std::move(content_type), hs = std::move(headers)]() mutable {
              self->do_start_stream(seq, status, std::move(ct), std::move(hs));
            });
}

void Session::do_start_stream(uint64_t seq, Status status, std::string content_type, Headers headers) {
  if (seq != seq_ || !in_request_ || out_ != Out::kNone) return;
  out_ = Out::kStream;
  if (client_gone_ || closed_) return;
  keep_alive_ = keep_alive_ && !stopping_ && !http10_;
  stream_header_ = std::make_unique<bhttp::response<bhttp::empty_body>>(status, version_);
  auto& h = *stream_header_;
  h.set(bhttp::field::server, state_->options.server_name);
  h.set(bhttp::field::content_type, content_type);
  for (const auto& [k, v] : headers) h.set(k, v);
  if (is_event_stream(content_type)) {
    h.set(bhttp::field::cache_control, "no-cache");
    h.set("X-Accel-Buffering", "no");  // proxies must not hold events back
  }
  h.keep_alive(keep_alive_);
  if (!http10_) h.chunked(true);  // an HTTP/1.0 client reads until close instead
  stream_sr_ = std::make_unique<bhttp::response_serializer<bhttp::empty_body>>(h);
  writing_ = true;
  arm(Phase::kWrite, state_->options.write_timeout);
  bhttp::async_write_header(
      stream_, *stream_sr_,
      beast::bind_front_handler(&Session::on_write_stream_header, shared_from_this()));
}

void Session::on_write_stream_header(beast::error_code ec, size_t) {
  writing_ = false;
  if (ec) return fail(ec, "write header");
  header_written_ = true;
  do_write_pending();
}

bool Session::post_write(uint64_t seq, std::string data) {
  if (gone_.load()) return false;
  if (data.empty()) return true;
  const size_t size = data.size();
  // The bound is on the backlog: one write larger than it (a KV-event snapshot) still
  // goes out to a client that keeps up.
  if (queued_bytes_.fetch_add(size) > state_->options.max_stream_queue) {
    // The client reads slower than we produce: drop it rather than grow without bound.
    queued_bytes_.fetch_sub(size);
    gone_.store(true);
    ++state_->stats.streams_dropped;
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->state_->options.log)
        self->state_->options.log("stream queue overflow: dropping the connection");
      self->client_gone();
    });
    return false;
  }
  net::post(stream_.get_executor(),
            [self = shared_from_this(), seq, d = std::move(data)]() mutable {
              self->do_write(seq, std::move(d));
            });
  return true;
}

void Session::do_write(uint64_t seq, std::string data) {
  if (seq != seq_ || !in_request_ || out_ != Out::kStream || client_gone_ || finish_requested_) {
    queued_bytes_.fetch_sub(data.size());
    return;
  }
  pending_.append(data);
  do_write_pending();
}

void Session::do_write_pending() {
  if (writing_ || !header_written_ || client_gone_ || closed_) return;
  if (pending_.empty()) {
    if (!finish_requested_) return;
    if (http10_) return finish_request();  // the close ends the body
    writing_ = true;
    arm(Phase::kWrite, state_->options.write_timeout);
    net::async_write(stream_, bhttp::make_chunk_last(),
                     beast::bind_front_handler(&Session::on_write_last, shared_from_this()));
    return;
  }
  // Everything queued since the last write goes out as one chunk.
  inflight_.swap(pending_);
  pending_.clear();
  writing_ = true;
  arm(Phase::kWrite, state_->options.write_timeout);
  if (http10_) {
    net::async_write(stream_, net::buffer(inflight_),
                     beast::bind_front_handler(&Session::on_write_chunk, shared_from_this()));
  } else {
    net::async_write(stream_, bhttp::make_chunk(net::buffer(inflight_)),
                     beast::bind_front_handler(&Session::on_write_chunk, shared_from_this()));
  }
}

void Session::on_write_chunk(beast::error_code ec, size_t) {
  writing_ = false;
  queued_bytes_.fetch_sub(inflight_.size());
  inflight_.clear();
  if (ec) return fail(ec, "write chunk");
  do_write_pending();
}

void Session::on_write_last(beast::error_code ec, size_t) {
  writing_ = false;
  if (ec) return fail(ec, "write last chunk");
  finish_request();
}

void Session::post_finish(uint64_t seq) {
  net::post(stream_.get_executor(), [self = shared_from_this(), seq] { self->do_finish(seq); });
}

void Session::do_finish(uint64_t seq) {
  if (seq != seq_ || !in_request_ || out_ != Out::kStream || finish_requested_) return;
  finish_requested_ = true;
  if (client_gone_ || closed_) return finish_request();
  do_write_pending();
}

// ---- the end of a request ----

void Session::post_on_cancel(uint64_t seq, std::function<void()> on_cancel) {
  net::post(stream_.get_executor(),
            [self = shared_from_this(), seq, cb = std::move(on_cancel)]() mutable {
              if (seq != self->seq_ || !self->in_request_) return;  // the response is complete
              if (self->client_gone_) return cb();
              self->on_cancel_ = std::move(cb);
            });
}

void Session::finish_request() {
  in_request_ = false;
  on_cancel_ = nullptr;  // may hold the handler's state; the request is over
  exchange_.reset();
  // A client that left can end the request while the stream's header is still being
  // written (the aborted write completes later): that write still reads the serializer.
  if (!writing_) {
    stream_header_.reset();
    stream_sr_.reset();
  }
  stop_watch();
  if (!keep_alive_ || stopping_ || client_gone_ || closed_) return do_close();
  do_read();
}

void Session::reject(const ApiError& error, bool close) {
  if (closed_) return;
  auto res = std::make_shared<Response>(static_cast<Status>(error.status), version_);
  res->set(bhttp::field::server, state_->options.server_name);
  res->set(bhttp::field::content_type, "application/json");
  res->body() = api_error_body(error);
  if (close) keep_alive_ = false;
  res->keep_alive(keep_alive_ && !stopping_);
  res->prepare_payload();
  if (head_) res->body().clear();
  plain_ = res;
  arm(Phase::kWrite, state_->options.write_timeout);
  bhttp::async_write(stream_, *plain_,
                     [self = shared_from_this(), close](beast::error_code ec, size_t n) {
                       self->on_write_reject(close, ec, n);
                     });
}

void Session::on_write_reject(bool close, beast::error_code ec, size_t) {
  plain_.reset();
  if (ec) return fail(ec, "write");
  if (close || !keep_alive_ || stopping_) return do_linger_close();
  do_read();
}

void Session::do_linger_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  buffer_.clear();
  arm(Phase::kLinger, kLingerTime);
  stream_.async_read_some(buffer_.prepare(kReadChunk),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::on_linger(beast::error_code ec, size_t n) {
  linger_bytes_ += n;
  buffer_.clear();
  if (ec || linger_bytes_ > kLingerMaxBytes) return close_socket();
  stream_.async_read_some(buffer_.prepare(kReadChunk),
                          beast::bind_front_handler(&Session::on_linger, shared_from_this()));
}

void Session::do_close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  close_socket();
}

void Session::close_socket() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ec;
  stream_.socket().close(ec);
}

// ---- Exchange ----

Exchange::Exchange(std::shared_ptr<Session> session, uint64_t seq, Request request)
    : session_(std::move(session)), seq_(seq), request_(std::move(request)) {}

Exchange::~Exchange() {
  if (!answered_.load()) {
    auto res = std::make_shared<Response>(Status::internal_server_error, 11);
    res->set(bhttp::field::content_type, "application/json");
    res->body() = api_error_body(ApiError::internal("the request was dropped without a response"));
    session_->post_respond(seq_, std::move(res));
  }
}

std::string_view Exchange::path() const {
  const std::string_view t(request_.target().data(), request_.target().size());
  return t.substr(0, t.find('?'));
}

std::string_view Exchange::query() const {
  const std::string_view t(request_.target().data(), request_.target().size());
  const size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

net::any_io_executor Exchange::executor() const {
  return session_->executor();
}

void Exchange::add_header(std::string name, std::string value) {
  std::lock_guard<std::mutex> lock(headers_mu_);
  headers_.emplace_back(std::move(name), std::move(value));
}

void Exchange::respond(Response response) {
  if (answered_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(headers_mu_);
    for (const auto& [k, v] : headers_) response.set(k, v);
  }
  session_->post_respond(seq_, std::make_shared<Response>(std::move(response)));
}

void Exchange::respond(Status status, std::string content_type, std::string body) {
  Response res(status, 11);
  res.set(bhttp::field::content_type, content_type);
  res.body() = std::move(body);
  respond(std::move(res));
}

void Exchange::respond_json(Status status, std::string json_text) {
  respond(status, "application/json", std::move(json_text));
}

void Exchange::respond_error(const ApiError& error) {
  respond_json(static_cast<Status>(error.status), api_error_body(error));
}

void Exchange::start_stream(Status status, std::string content_type) {
  if (answered_.exchange(true)) return;
  std::vector<std::pair<std::string, std::string>> headers;
  {
    std::lock_guard<std::mutex> lock(headers_mu_);
    headers = headers_;
  }
  session_->post_start_stream(seq_, status, std::move(content_type), std::move(headers));
}

bool Exchange::write(std::string data) {
  if (cancelled_.load() || finished_.load()) return false;
  return session_->post_write(seq_, std::move(data));
}

void Exchange::finish() {
  if (finished_.exchange(true)) return;
  session_->post_finish(seq_);
}

void Exchange::hold(std::shared_ptr<void> resource) {
  std::lock_guard<std::mutex> lock(headers_mu_);
  held_.push_back(std::move(resource));
}

void Exchange::on_cancel(std::function<void()> on_cancel) {
  session_->post_on_cancel(seq_, std::move(on_cancel));
}

}  // namespace sy::http
