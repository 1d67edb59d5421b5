// A real `switchyard-faultproxy` process in front of an upstream port, for integration
// tests: started with its listen and control ports chosen by the OS (read back from the
// line it prints), toxics added and cleared through its control API, stopped with
// SIGTERM (SIGKILL in the destructor if it is still running). FaultProxyControl alone
// drives a proxy someone else started, given its control port.
//
//   FaultProxyProcess proxy(worker_port);
//   ASSERT_TRUE(proxy.started());
//   const int64_t id = proxy.add_toxic({{"type", "reset"}, {"bytes", 2000}});
//   ... connect to proxy.port() instead of worker_port ...
//   proxy.remove_toxic(id);
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "../worker/worker_process.h"  // http_request

namespace sy::testing {

// The control API of a running proxy.
class FaultProxyControl {
 public:
  explicit FaultProxyControl(uint16_t control_port = 0) : control_port_(control_port) {}

  uint16_t control_port() const { return control_port_; }

  // POST /toxics: the new toxic's id, or -1 (the reply is in last_reply()).
  int64_t add_toxic(const nlohmann::json& toxic) {
    last_ = http_request(control_port_, "POST", "/toxics", toxic.dump());
    const auto j = last_.json();
    return last_.status == 201 && j.contains("id") ? j["id"].get<int64_t>() : -1;
  }
  bool remove_toxic(int64_t id) {
    last_ = http_request(control_port_, "DELETE", "/toxics/" + std::to_string(id));
    return last_.status == 200;
  }
  bool clear_toxics() {
    last_ = http_request(control_port_, "DELETE", "/toxics");
    return last_.status == 200;
  }
  // POST /reset-all: how many connections were reset, or -1.
  int64_t reset_all() {
    last_ = http_request(control_port_, "POST", "/reset-all");
    const auto j = last_.json();
    return last_.status == 200 && j.contains("reset") ? j["reset"].get<int64_t>() : -1;
  }
  nlohmann::json toxics() { return get("/toxics"); }
  nlohmann::json stats() { return get("/stats"); }
  const HttpResult& last_reply() const { return last_; }

 protected:
  nlohmann::json get(const std::string& target) {
    last_ = http_request(control_port_, "GET", target);
    return last_.status == 200 ? last_.json() : nlohmann::json();
  }

  uint16_t control_port_ = 0;
  HttpResult last_;
};

class FaultProxyProcess : public FaultProxyControl {
 public:
  // `toxics` are passed as --toxic flags; `extra_args` as they are (e.g. {"--seed", "7"}).
  explicit FaultProxyProcess(uint16_t upstream_port, const std::vector<nlohmann::json>& toxics = {},
                             const std::vector<std::string>& extra_args = {},
                             std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::vector<std::string> args = {std::string(SY_BIN_DIR) + "/switchyard-faultproxy",
                                     "--upstream", "127.0.0.1:" + std::to_string(upstream_port)};
    for (const auto& t : toxics) {
      args.push_back("--toxic");
      args.push_back(t.dump());
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      exec_program(args);
    }
    ::close(out[1]);
    stdout_fd_ = out[0];
    read_ports(limit);
  }

  ~FaultProxyProcess() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }
  FaultProxyProcess(const FaultProxyProcess&) = delete;
  FaultProxyProcess& operator=(const FaultProxyProcess&) = delete;

  bool started() const { return port_ != 0 && control_port_ != 0; }
  uint16_t port() const { return port_; }  // where clients connect
  pid_t pid() const { return pid_; }

  // SIGTERM; the exit status, or -1 when it did not exit within `limit` (then SIGKILL).
  int terminate(std::chrono::seconds limit = std::chrono::seconds(10)) {
    if (!running()) return exit_code_;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        exited_ = true;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_code_;
  }

 private:
  bool running() {
    if (pid_ <= 0 || exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      return false;
    }
    return true;
  }

  // The line: "switchyard-faultproxy listening on HOST:PORT control on HOST:PORT ...".
  void read_ports(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const auto port_after = [](const std::string& line, const std::string& marker) -> uint16_t {
      size_t at = line.find(marker);
      if (at == std::string::npos) return 0;
      at = line.find(' ', at + marker.size());  // end of HOST:PORT
      const size_t colon = line.rfind(':', at);
      return static_cast<uint16_t>(std::atoi(line.c_str() + colon + 1));
    };
    std::string pending;
    while (pending.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{stdout_fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return;
      char buf[512];
      const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n <= 0) return;  // it exited (a bad flag, a port in use)
      pending.append(buf, static_cast<size_t>(n));
    }
    const std::string line = pending.substr(0, pending.find('\n'));
    port_ = port_after(line, " listening on ");
    control_port_ = port_after(line, " control on ");
  }

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  uint16_t port_ = 0;
};

}  // namespace sy::testing
