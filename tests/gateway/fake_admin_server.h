// A stand-in for the gateway's admin listener: serves the embedded dashboard page and
// canned answers for /admin/status and /admin/events, so tests can render the page
// against fleets the real gateway would take long to build (none, forty replicas) or
// against a failing status endpoint. Loopback, port chosen by the OS, one thread per
// connection, every response closes its connection. The server is in
// fake_admin_server.cpp (the sy_test_http library), so its test source does not compile
// Asio and Beast.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace sy::testing {

struct FakeReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class FakeAdminServer {
 public:
  using Handler = std::function<FakeReply(const std::string& target)>;

  explicit FakeAdminServer(Handler handler);
  ~FakeAdminServer();
  FakeAdminServer(const FakeAdminServer&) = delete;
  FakeAdminServer& operator=(const FakeAdminServer&) = delete;

  uint16_t port() const { return port_; }
  std::string url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(port_) + target;
  }

 private:
  struct Listener;
  std::unique_ptr<Listener> listener_;
  uint16_t port_ = 0;
};

}  // namespace sy::testing
