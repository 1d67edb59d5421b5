#include "worker/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <cstdlib>
#include <thread>

namespace sy::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

void exec_program(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& args, const std::string& binary) {
  int out[2];
  if (::pipe(out) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (!std::getenv("SY_TEST_WORKER_STDERR")) ::dup2(devnull, 2);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<std::string> all = {binary, "serve", "--port", "0", "--host", "127.0.0.1"};
    all.insert(all.end(), args.begin(), args.end());
    exec_program(std::move(all));
  }
  ::close(out[1]);
  stdout_ = ::fdopen(out[0], "r");
  char line[512];
  while (stdout_ && std::fgets(line, sizeof line, stdout_)) {
    const std::string s(line);
    const size_t p = s.find("http://127.0.0.1:");
    if (p != std::string::npos) {
      port_ = static_cast<uint16_t>(std::stoi(s.substr(p + 17)));
      break;
    }
  }
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (stdout_) std::fclose(stdout_);
}

int WorkerProcess::terminate(std::chrono::seconds limit) {
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

void set_receive_timeout(int fd, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

std::string request_text(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& headers) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers;
  if (method == "POST") r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  return r + "\r\n" + body;
}

HttpResult http_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                        const std::string& headers) {
  net::io_context ioc;
  tcp::socket s(ioc);
  beast::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {};
  set_receive_timeout(s.native_handle(), 120);
  net::write(s, net::buffer(request_text(method, target, body, headers)), ec);
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(256 << 20);
  bhttp::read(s, buf, p, ec);
  if (ec) return {};
  HttpResult r;
  r.status = p.get().result_int();
  r.body = p.get().body();
  r.content_type = std::string(p.get()[bhttp::field::content_type]);
  for (const auto& f : p.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  return r;
}

struct SseStream::Connection {
  net::io_context ioc;
  tcp::socket socket{ioc};
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> parser;
  http::SseParser sse;
  size_t fed = 0;
  int status = 0;
  bool failed = false;
};

SseStream::SseStream(uint16_t port, const std::string& method, const std::string& target, const std::string& body)
    : c_(std::make_unique<Connection>()) {
  beast::error_code ec;
  c_->socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return;
  set_receive_timeout(c_->socket.native_handle(), 120);
  net::write(c_->socket, net::buffer(request_text(method, target, body, {})), ec);
  c_->parser.body_limit(256 << 20);
  bhttp::read_header(c_->socket, c_->buf, c_->parser, ec);
  if (!ec) c_->status = c_->parser.get().result_int();
}

SseStream::~SseStream() = default;

int SseStream::status() const { return c_->status; }

bool SseStream::next(std::vector<http::SseEvent>& events) {
  events.clear();
  for (;;) {
    const std::string& body = c_->parser.get().body();
    if (body.size() > c_->fed) {
      c_->sse.feed(std::string_view(body).substr(c_->fed), events);
      c_->fed = body.size();
      if (!events.empty()) return true;
    }
    if (c_->parser.is_done() || c_->failed) return false;
    beast::error_code ec;
    bhttp::read_some(c_->socket, c_->buf, c_->parser, ec);
    if (ec) c_->failed = true;
  }
}

std::vector<http::SseEvent> SseStream::rest() {
  std::vector<http::SseEvent> all, some;
  while (next(some)) all.insert(all.end(), some.begin(), some.end());
  return all;
}

bool SseStream::complete() const { return c_->parser.is_done(); }

void SseStream::close() {
  beast::error_code ec;
  c_->socket.shutdown(tcp::socket::shutdown_both, ec);
  c_->socket.close(ec);
}

}  // namespace sy::testing
