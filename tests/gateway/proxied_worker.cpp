// sy_proxied_worker: a test-only `worker.binary` that puts a switchyard-faultproxy
// between the gateway and a switchyard-simworker, so that tests can break the
// gateway↔worker link of one replica.
//
//   sy_proxied_worker serve --model M --host H --port 0 --boot-id ID ... --control-dir DIR
//
// It starts `switchyard-simworker` with every argument but `--control-dir DIR` (its own)
// on a port the OS chooses, then `switchyard-faultproxy --upstream` that port listening
// on H:0, writes DIR/ID.json (`proxy_port`, `control_port`, `worker_port`, `worker_pid`,
// `proxy_pid`; written whole, then renamed), and prints the simworker's listening line
// with the proxy's address, which is how the supervisor learns the port. /ready passes
// through the proxy untouched (it is TCP), boot id and all.
//
// Both children stay in its process group (the supervisor signals the group) and die
// with it (PR_SET_PDEATHSIG). SIGTERM or SIGINT is passed on to both; when either child
// exits, the other is stopped and this process exits 1, so the supervisor sees a dead
// worker and restarts the pair.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Child {
  pid_t pid = -1;
  int out = -1;  // its stdout
};

Child spawn(const std::vector<std::string>& args, const sigset_t& original_mask) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);  // a blocked mask survives exec
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

// Reads the child's stdout up to the first line that contains `marker`; "" when the
// child exits first.
std::string line_with(int fd, const char* marker) {
  std::string pending;
  char buf[512];
  for (;;) {
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
      if (pending.substr(0, nl).find(marker) != std::string::npos) return pending.substr(0, nl);
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return {};
    pending.append(buf, static_cast<size_t>(n));
  }
}

// Whatever else a child prints goes to stderr (the gateway's log), so it never blocks
// on a full pipe.
void drain_to_stderr(int fd) {
  std::thread([fd] {
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) (void)!::write(STDERR_FILENO, buf, static_cast<size_t>(n));
    ::close(fd);
  }).detach();
}

// The port after the last ':' of the first word that follows `marker`.
int port_after(const std::string& line, const std::string& marker) {
  const size_t at = line.find(marker);
  if (at == std::string::npos) return 0;
  const size_t end = std::min(line.find(' ', at + marker.size()), line.size());
  const size_t colon = line.rfind(':', end);
  return colon == std::string::npos || colon < at ? 0 : std::atoi(line.c_str() + colon + 1);
}

int fail(const char* what, Child& a, Child& b) {
  std::fprintf(stderr, "sy_proxied_worker: %s\n", what);
  for (Child* c : {&a, &b})
    if (c->pid > 0) ::kill(c->pid, SIGKILL);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> worker = {std::string(SY_BIN_DIR) + "/switchyard-simworker"};
  std::string control_dir, boot_id, host = "127.0.0.1";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--control-dir" && i + 1 < argc) {
      control_dir = argv[++i];
      continue;
    }
    if (a == "--boot-id" && i + 1 < argc) boot_id = argv[i + 1];
    if (a == "--host" && i + 1 < argc) host = argv[i + 1];
    worker.push_back(a);
  }
  if (control_dir.empty() || boot_id.empty()) {
    std::fprintf(stderr, "usage: sy_proxied_worker serve ... --boot-id ID --control-dir DIR\n");
    return 2;
  }

  // Signals wait for sigwait below; the children get the original mask back.
  sigset_t wanted, original;
  sigemptyset(&wanted);
  for (int s : {SIGTERM, SIGINT, SIGCHLD}) sigaddset(&wanted, s);
  ::sigprocmask(SIG_BLOCK, &wanted, &original);

  Child sim = spawn(worker, original), proxy;
  const int worker_port = port_after(line_with(sim.out, " listening on http://"), "http://");
  if (worker_port <= 0) return fail("the simworker printed no listening line", sim, proxy);
  drain_to_stderr(sim.out);
  proxy = spawn({std::string(SY_BIN_DIR) + "/switchyard-faultproxy", "--upstream", "127.0.0.1:" + std::to_string(worker_port),
                 "--listen", host + ":0", "--control", "127.0.0.1:0"},
                original);
  const std::string proxy_line = line_with(proxy.out, " listening on ");
  const int proxy_port = port_after(proxy_line, " listening on ");
  const int control_port = port_after(proxy_line, " control on ");
  if (proxy_port <= 0 || control_port <= 0) return fail("the faultproxy printed no ports", sim, proxy);
  drain_to_stderr(proxy.out);

  const std::string path = control_dir + "/" + boot_id + ".json";
  {
    std::ofstream f(path + ".tmp");
    f << "{\"proxy_port\": " << proxy_port << ", \"control_port\": " << control_port << ", \"worker_port\": " << worker_port
      << ", \"worker_pid\": " << sim.pid << ", \"proxy_pid\": " << proxy.pid << "}\n";
    if (!f) return fail("cannot write the control file", sim, proxy);
  }
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) return fail("cannot rename the control file", sim, proxy);
  std::printf("switchyard-simworker listening on http://%s:%d\n", host.c_str(), proxy_port);
  std::fflush(stdout);

  for (;;) {
    int sig = 0;
    if (::sigwait(&wanted, &sig) != 0) continue;
    if (sig != SIGCHLD) {
      for (const Child& c : {sim, proxy}) ::kill(c.pid, SIGTERM);
      for (const Child& c : {sim, proxy}) ::waitpid(c.pid, nullptr, 0);
      return 0;
    }
    for (int status = 0;;) {
      const pid_t gone = ::waitpid(-1, &status, WNOHANG);
      if (gone <= 0) break;
      if (gone != sim.pid && gone != proxy.pid) continue;
      const Child& other = gone == sim.pid ? proxy : sim;
      std::fprintf(stderr, "sy_proxied_worker: the %s exited; stopping the other\n", gone == sim.pid ? "simworker" : "faultproxy");
      ::kill(other.pid, SIGTERM);
      ::waitpid(other.pid, nullptr, 0);
      return 1;
    }
  }
}
