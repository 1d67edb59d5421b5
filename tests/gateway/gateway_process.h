// A real `switchyard-gateway --config FILE` process for integration tests: started with
// its listeners on ports the OS chose (read back from the lines it prints), stopped with
// SIGTERM and then SIGKILL, and checked to leave no worker process behind.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chromium.h"  // read_text_file
#include "worker/worker_process.h"  // exec_program

namespace sy::testing {

class GatewayProcess {
 public:
  // Starts the gateway and waits (at most `limit`) for the addresses it prints. Its
  // stderr goes to `log_path`.
  GatewayProcess(const std::string& binary, const std::vector<std::string>& args,
                 const std::string& log_path,
                 std::chrono::seconds limit = std::chrono::seconds(120))
      : log_path_(log_path) {
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      if (FILE* log = std::fopen(log_path.c_str(), "w")) ::dup2(::fileno(log), 2);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<std::string> all = {binary};
      all.insert(all.end(), args.begin(), args.end());
      exec_program(std::move(all));
    }
    ::close(out[1]);
    stdout_fd_ = out[0];
    read_addresses(limit);
  }

  ~GatewayProcess() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    kill_workers();
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }

  GatewayProcess(const GatewayProcess&) = delete;
  GatewayProcess& operator=(const GatewayProcess&) = delete;

  uint16_t port() const { return port_; }
  // The admin listener's port: the front port when the gateway serves both on one.
  uint16_t admin_port() const { return admin_port_ ? admin_port_ : port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return read_text_file(log_path_); }

  // Worker pids seen in /admin/status, checked by workers_left() after the gateway exits.
  void remember_worker(pid_t pid) {
    if (pid > 0) worker_pids_.insert(pid);
  }

  // SIGTERM, then SIGKILL after `grace`. Returns the exit status, or -1 when it had to
  // be killed or died of a signal.
  int terminate(std::chrono::seconds grace = std::chrono::seconds(40)) {
    if (!running()) return exit_code_;
    ::kill(pid_, SIGTERM);
    if (wait_exit(grace)) return exit_code_;
    ::kill(pid_, SIGKILL);
    wait_exit(std::chrono::seconds(10));
    return -1;
  }

  // Waits at most `limit` for the gateway to exit by itself: its exit status (-1 when a
  // signal ended it), or nothing while it still runs.
  std::optional<int> wait_for_exit(std::chrono::seconds limit) {
    if (!wait_exit(limit)) return std::nullopt;
    return exit_code_;
  }

  // Every live process started with one of this gateway's boot ids (`--boot-id
  // gw<pid>-...`), restarted workers included, whether or not /admin/status showed them.
  std::vector<pid_t> processes_with_its_boot_ids() const {
    const std::string marker = "gw" + std::to_string(pid_) + "-";
    std::vector<pid_t> found;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t p = std::atoi(name.c_str());
      std::string cmdline = read_text_file(e.path() / "cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      if (cmdline.find("--boot-id " + marker) != std::string::npos && worker_alive(p)) found.push_back(p);
    }
    return found;
  }

  // Remembered workers that run now.
  std::vector<pid_t> live_workers() const {
    std::vector<pid_t> live;
    for (pid_t p : worker_pids_)
      if (worker_alive(p)) live.push_back(p);
    return live;
  }

  // Remembered workers still alive `patience` after the gateway exited (each is killed
  // with its process group, so a failing test leaves nothing behind either).
  std::vector<pid_t> workers_left(std::chrono::seconds patience = std::chrono::seconds(15)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    std::vector<pid_t> left = live_workers();
    while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = live_workers();
    }
    kill_workers();
    return left;
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

  bool wait_exit(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (running()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // Alive means: the pid exists, is not a zombie, and still runs a worker program
  // (switchyard-worker, or the simulated ones of the resilience tests; a recycled pid is
  // someone else's process).
  static bool worker_alive(pid_t p) {
    const std::string proc = "/proc/" + std::to_string(p);
    const std::string stat = read_text_file(proc + "/stat");
    if (stat.empty()) return false;
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z')
      return false;
    const std::string cmdline = read_text_file(proc + "/cmdline");
    for (const char* program : {"switchyard-worker", "switchyard-simworker", "sy_proxied_worker"})
      if (cmdline.find(program) != std::string::npos) return true;
    return false;
  }

  void kill_workers() {
    for (pid_t p : worker_pids_)
      if (worker_alive(p)) {
        ::kill(-p, SIGKILL);  // workers lead their own process groups
        ::kill(p, SIGKILL);
      }
  }

  // Reads stdout lines until "listening on http://HOST:PORT"; "admin on http://HOST:PORT"
  // follows in the same flush when the admin routes have their own listener.
  void read_addresses(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::string pending;
    auto port_after = [](const std::string& line, const std::string& marker) -> uint16_t {
      const size_t at = line.find(marker);
      if (at == std::string::npos) return 0;
      const size_t colon = line.rfind(':');
      return colon == std::string::npos
                 ? 0
                 : static_cast<uint16_t>(std::atoi(line.c_str() + colon + 1));
    };
    for (;;) {
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        const std::string line = pending.substr(0, nl);
        if (uint16_t p = port_after(line, "listening on http://")) port_ = p;
        if (uint16_t p = port_after(line, "admin on http://")) admin_port_ = p;
      }
      if (port_ && admin_port_) return;
      // Once the front port is known, the admin line is either already here or absent.
      const auto now = std::chrono::steady_clock::now();
      const auto wait_until =
          port_ ? std::min(deadline, now + std::chrono::milliseconds(500)) : deadline;
      if (now >= wait_until) return;
      pollfd pfd{stdout_fd_, POLLIN, 0};
      const int ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - now).count());
      if (::poll(&pfd, 1, ms) <= 0) return;
      char buf[4096];
      const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
      if (n <= 0) return;  // the gateway exited
      pending.append(buf, static_cast<size_t>(n));
    }
  }

  std::string log_path_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
  std::set<pid_t> worker_pids_;
};

}  // namespace sy::testing
