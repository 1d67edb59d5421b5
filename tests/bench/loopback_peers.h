// Both ends around a proxy under test, on loopback: an upstream server (plain Asio on its
// own thread, port 0) that echoes or floods, and a blocking client socket whose reads end
// with what happened (bytes, EOF, reset, timeout), so fault tests can tell them apart.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace sy::testing {

// Byte i of a flood stream: a pattern whose period (251) does not divide common sizes.
inline char flood_byte(uint64_t i) {
  return static_cast<char>(i % 251);
}

class TestUpstream {
 public:
  enum class Mode {
    kEcho,   // sends back what it reads; closes after the client's FIN
    kFlood,  // writes flood_byte(0, 1, ...) as fast as the connection takes them
  };
  using tcp = boost::asio::ip::tcp;

  explicit TestUpstream(Mode mode) : mode_(mode), acceptor_(ioc_) {
    const tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(at.protocol());
    acceptor_.bind(at);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~TestUpstream() {
    ioc_.stop();
    thread_.join();
  }

  uint16_t port() const { return port_; }
  size_t connections() const { return connections_.load(); }
  uint64_t bytes_received() const { return received_.load(); }
  uint64_t bytes_sent() const { return sent_.load(); }

 private:
  struct Conn {
    explicit Conn(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::array<char, 64 * 1024> buf{};
    uint64_t offset = 0;  // flood: stream position of buf[0]
  };

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec) return;
      ++connections_;
      auto c = std::make_shared<Conn>(std::move(s));
      if (mode_ == Mode::kEcho) {
        echo(c);
      } else {
        for (size_t i = 0; i < c->buf.size(); ++i) c->buf[i] = flood_byte(i);
        flood(c);
      }
      accept();
    });
  }

  void echo(std::shared_ptr<Conn> c) {
    c->socket.async_read_some(
        boost::asio::buffer(c->buf), [this, c](boost::system::error_code ec, size_t n) {
          if (ec) {
            boost::system::error_code ignored;
            c->socket.close(ignored);  // after the client's FIN: a FIN back
            return;
          }
          received_ += n;
          boost::asio::async_write(c->socket, boost::asio::buffer(c->buf.data(), n),
                                   [this, c](boost::system::error_code wec, size_t w) {
                                     sent_ += w;
                                     if (!wec) echo(c);
                                   });
        });
  }

  void flood(std::shared_ptr<Conn> c) {
    // Writes start at the pattern's phase for c->offset: the buffer holds the pattern
    // from 0, so each write covers whole periods' worth of shift.
    const size_t phase = c->offset % 251;
    const size_t len = (c->buf.size() - 251) / 251 * 251;
    c->socket.async_write_some(boost::asio::buffer(c->buf.data() + phase, len),
                               [this, c](boost::system::error_code ec, size_t n) {
                                 if (ec) return;
                                 sent_ += n;
                                 c->offset += n;
                                 flood(c);
                               });
  }

  const Mode mode_;
  boost::asio::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<size_t> connections_{0};
  std::atomic<uint64_t> received_{0};
  std::atomic<uint64_t> sent_{0};
};

// A blocking TCP client on 127.0.0.1 with reads bounded in time.
class Client {
 public:
  struct Read {
    enum End { kBytes, kEof, kReset, kTimeout, kError };
    std::string data;
    End end = kBytes;  // kBytes: `want` bytes arrived
    int error = 0;     // errno, for kError
  };

  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
    const int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Client() { close(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  // 0, or the errno of the failed send.
  int send_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0) return errno == EINTR ? 0 : errno;
      off += static_cast<size_t>(n);
    }
    return 0;
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  // Reads until `want` bytes came, or EOF, an error, or `timeout` passed.
  Read read(size_t want, std::chrono::milliseconds timeout) {
    Read r;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[64 * 1024];
    while (r.data.size() < want) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) == 0) {
        r.end = Read::kTimeout;
        return r;
      }
      const ssize_t n = ::recv(fd_, buf, std::min(sizeof buf, want - r.data.size()), 0);
      if (n == 0) {
        r.end = Read::kEof;
        return r;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        r.error = errno;
        r.end = errno == ECONNRESET ? Read::kReset : Read::kError;
        return r;
      }
      r.data.append(buf, static_cast<size_t>(n));
    }
    return r;
  }
  Read read_to_end(std::chrono::milliseconds timeout) { return read(SIZE_MAX, timeout); }

  // Closes with RST instead of FIN (SO_LINGER 0), as a crashed peer's kernel may.
  void abort() {
    linger l{1, 0};
    if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

inline const char* end_name(Client::Read::End e) {
  static const char* kNames[] = {"bytes", "eof", "reset", "timeout", "error"};
  return kNames[e];
}

}  // namespace sy::testing
