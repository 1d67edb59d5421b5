#include "gateway/stream_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>

namespace sy::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

TimedResult timed_request(uint16_t port, const std::string& method, const std::string& target, const std::string& body,
                          std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  TimedResult out;
  auto finish = [&] {
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  };
  net::io_context ioc;
  tcp::socket s(ioc);
  beast::error_code ec;
  s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return finish();
  net::write(s, net::buffer(request_text(method, target, body, "Connection: close\r\n")), ec);
  if (ec) return finish();
  bhttp::response_parser<bhttp::string_body> p;
  p.body_limit(64 << 20);
  p.eager(true);
  std::string pending;
  char buf[16384];
  while (!p.is_done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{s.native_handle(), POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) == 0) {
      out.timed_out = true;
      return finish();
    }
    const ssize_t n = ::recv(s.native_handle(), buf, sizeof buf, 0);
    if (n <= 0) {
      if (n == 0) p.put_eof(ec);
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    while (!pending.empty() && !p.is_done()) {
      const size_t used = p.put(net::buffer(pending), ec);
      if (ec == bhttp::error::need_more) ec = {};
      if (ec) return finish();
      if (used == 0) break;
      pending.erase(0, used);
    }
  }
  if (!p.is_done()) return finish();
  out.http.status = p.get().result_int();
  out.http.body = p.get().body();
  for (const auto& f : p.get()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.http.headers[name] = std::string(f.value());
  }
  return finish();
}

LeavingClient::LeavingClient(uint16_t port, const std::string& target, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string request = request_text("POST", target, body, {});
  bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  for (size_t sent = 0; ok && sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    ok = n > 0;
    if (ok) sent += static_cast<size_t>(n);
  }
  if (ok) fd_ = fd;
  else ::close(fd);
}

LeavingClient::~LeavingClient() { leave(); }

bool LeavingClient::read_events(int count, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[16384];
  while (fd_ >= 0 && events() < count) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(left)) <= 0) return false;
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    received_.append(buf, static_cast<size_t>(n));
  }
  return fd_ >= 0;
}

void LeavingClient::leave() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int LeavingClient::events() const {
  int n = 0;
  for (size_t at = 0; (at = received_.find("data: ", at)) != std::string::npos; at += 6) ++n;
  return n;
}

}  // namespace sy::testing
