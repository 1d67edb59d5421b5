#include "gateway/supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "gateway/upstream_call.h"

extern char** environ;

namespace sy::gateway {

namespace {
constexpr auto kReadyPollInterval = std::chrono::milliseconds(200);
}  // namespace

const char* replica_phase_name(ReplicaPhase p) {
  switch (p) {
    case ReplicaPhase::kStarting: return "starting";
    case ReplicaPhase::kReady: return "ready";
    case ReplicaPhase::kDraining: return "draining";
    case ReplicaPhase::kRestarting: return "restarting";
    case ReplicaPhase::kStopped: return "stopped";
  }
  return "?";
}

struct Supervisor::Proc {
  explicit Proc(boost::asio::any_io_executor ex) : out(ex), poll_timer(ex), restart_timer(ex), kill_timer(ex) {}
  boost::asio::posix::stream_descriptor out;  // the worker's stdout
  boost::asio::streambuf out_buf;
  boost::asio::steady_timer poll_timer;
  boost::asio::steady_timer restart_timer;
  boost::asio::steady_timer kill_timer;
  std::chrono::steady_clock::time_point ready_deadline;
  double backoff_s = 0;
};

Supervisor::Supervisor(boost::asio::any_io_executor ex, SupervisorOptions options)
    : ex_(ex), options_(std::move(options)), pump_timer_(ex), sigchld_(ex, SIGCHLD) {}

Supervisor::~Supervisor() {
  for (size_t i = 0; i < replicas_.size(); ++i)
    if (replicas_[i].pid > 0) kill_group(static_cast<int>(i), SIGKILL);
}

double Supervisor::now_epoch() const {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool Supervisor::all_stopped() const {
  for (const auto& r : replicas_)
    if (r.pid > 0) return false;
  return true;
}

void Supervisor::set_phase(int index, ReplicaPhase p) {
  replicas_[static_cast<size_t>(index)].phase = p;
  if (on_change) on_change(replicas_[static_cast<size_t>(index)]);
}

void Supervisor::start(const ModeConfig& mode) {
  stopping_ = false;
  mode_ = mode.name;
  mode_config_ = mode;
  replicas_.clear();
  procs_.clear();
  start_queue_.clear();
  const auto& devices = options_.fleet.devices;
  const bool cpu = devices.size() == 1 && devices[0] == "cpu";
  for (int i = 0; i < mode.replicas; ++i) {
    ReplicaInfo r;
    r.index = i;
    r.id = "r" + std::to_string(i);
    r.phase = ReplicaPhase::kStopped;
    r.tp = mode.tp;
    r.pcp = mode.pcp;
    if (cpu) {
      r.devices = {"cpu"};
    } else {
      for (int d = 0; d < mode.devices_per_replica; ++d) r.devices.push_back(devices[static_cast<size_t>(i * mode.devices_per_replica + d)]);
    }
    replicas_.push_back(r);
    procs_.push_back(std::make_shared<Proc>(ex_));
    procs_.back()->backoff_s = options_.fleet.startup.restart_backoff_initial_s;
    start_queue_.push_back(i);
  }
  next_start_allowed_ = std::chrono::steady_clock::now();
  sigchld_.async_wait([self = shared_from_this()](boost::system::error_code ec, int) {
    if (!ec) self->reap();
  });
  pump();
}

void Supervisor::pump() {
  if (stopping_) return;
  int starting = 0;
  for (const auto& r : replicas_) starting += r.phase == ReplicaPhase::kStarting;
  while (!start_queue_.empty() && starting < options_.fleet.startup.max_parallel_loads) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_start_allowed_) {
      pump_timer_.expires_at(next_start_allowed_);
      pump_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->pump();
      });
      return;
    }
    if (start_gate && !start_gate()) {
      pump_timer_.expires_after(kGateRecheck);
      pump_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->pump();
      });
      return;
    }
    const int index = start_queue_.front();
    start_queue_.pop_front();
    spawn(index);
    ++starting;
    // With parallel loads allowed, the next may start at once; otherwise it waits for
    // this one's readiness (which moves next_start_allowed_).
  }
}

std::vector<std::string> Supervisor::worker_argv(int index) const {
  const FleetConfig& f = options_.fleet;
  const ReplicaInfo& r = replicas_[static_cast<size_t>(index)];
  std::vector<std::string> a = {f.worker.binary, "serve", "--model", f.model, "--host", r.host, "--port", "0", "--boot-id", r.boot_id,
                                "--max-num-seqs", std::to_string(f.worker.max_num_seqs), "--prefill-chunk",
                                std::to_string(f.worker.prefill_chunk), "--block-size", std::to_string(f.worker.block_size),
                                "--served-model-name", f.served_model_name, "--numerics", f.worker.numerics};
  if (f.worker.kv_blocks > 0) {
    a.insert(a.end(), {"--kv-blocks", std::to_string(f.worker.kv_blocks)});
  } else {
    a.insert(a.end(), {"--kv-memory-gb", std::to_string(f.worker.kv_memory_gb)});
  }
  if (f.worker.kv_host_gb > 0) a.insert(a.end(), {"--kv-host-gb", std::to_string(f.worker.kv_host_gb)});
  if (r.devices.size() != 1 || r.devices[0] != "cpu") a.insert(a.end(), {"--device", "cuda"});
  if (r.tp > 1) a.insert(a.end(), {"--tp", std::to_string(r.tp)});
  if (r.pcp > 1) a.insert(a.end(), {"--pcp", std::to_string(r.pcp)});
  a.insert(a.end(), f.worker.extra_args.begin(), f.worker.extra_args.end());
  return a;
}

std::vector<std::string> Supervisor::worker_env(int index) const {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("SWITCHYARD_THREADS=", 0) == 0 || kv.rfind("OPENBLAS_NUM_THREADS=", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) continue;
    env.push_back(kv);
  }
  const ReplicaInfo& r = replicas_[static_cast<size_t>(index)];
  if (r.devices.size() == 1 && r.devices[0] == "cpu") {
    int threads = options_.fleet.worker.cpu_threads;
    if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, mode_config_.replicas));
    env.push_back("SWITCHYARD_THREADS=" + std::to_string(threads));
    env.push_back("OPENBLAS_NUM_THREADS=" + std::to_string(threads));
  } else {
    std::string list;
    for (const auto& d : r.devices) list += (list.empty() ? "" : ",") + d;
    env.push_back("CUDA_VISIBLE_DEVICES=" + list);
  }
  return env;
}

void Supervisor::spawn(int index) {
  ReplicaInfo& r = replicas_[static_cast<size_t>(index)];
  Proc& p = *procs_[static_cast<size_t>(index)];
  std::random_device rd;
  r.boot_id = options_.gateway_id + "-" + r.id + "-" + std::to_string(++boot_counter_) + "-" + std::to_string(rd());
  r.port = 0;
  r.ready_at = 0;
  const auto argv_s = worker_argv(index);
  const auto env_s = worker_env(index);
  std::vector<char*> argv, envp;
  for (const auto& s : argv_s) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (const auto& s : env_s) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return schedule_restart(index, std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return schedule_restart(index, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the gateway died before prctl took effect
    ::dup2(fds[1], STDOUT_FILENO);
    // Nothing of the gateway's but stdio crosses: Asio's sockets are not close-on-exec,
    // and a worker holding the gateway's listeners would keep their ports bound.
    if (::close_range(3, ~0U, 0) != 0)
      for (int fd = 3; fd < 65536; ++fd) ::close(fd);
    ::execve(argv[0], argv.data(), envp.data());
    // The gateway checked worker.binary at startup; it went away since. Say so in the log
    // (write and a hand-made number: nothing else is async-signal-safe here).
    const int err = errno;
    char msg[] = "cannot execute worker.binary: errno 000\n";
    msg[sizeof msg - 5] = static_cast<char>('0' + err / 100 % 10);
    msg[sizeof msg - 4] = static_cast<char>('0' + err / 10 % 10);
    msg[sizeof msg - 3] = static_cast<char>('0' + err % 10);
    [[maybe_unused]] const ssize_t n = ::write(STDOUT_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that killpg works before the child runs
  ::close(fds[1]);
  r.pid = pid;
  r.started_at = now_epoch();
  p.out = boost::asio::posix::stream_descriptor(ex_, fds[0]);
  p.out_buf.consume(p.out_buf.size());
  p.ready_deadline = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(options_.fleet.startup.ready_timeout_s * 1000));
  if (options_.log) options_.log("supervisor: started " + r.id + " (pid " + std::to_string(pid) + ", boot id " + r.boot_id + ")");
  set_phase(index, ReplicaPhase::kStarting);
  read_stdout(index);
  poll_ready(index);
}

// The worker prints the URL it listens on once bound; the rest of its stdout goes to the
// gateway's log.
void Supervisor::read_stdout(int index) {
  std::shared_ptr<Proc> proc = procs_[static_cast<size_t>(index)];
  const pid_t pid = replicas_[static_cast<size_t>(index)].pid;
  Proc& p = *proc;
  // The read completes into p.out_buf even when aborted: the handler keeps p alive.
  boost::asio::async_read_until(p.out, p.out_buf, '\n', [self = shared_from_this(), proc, index, pid](boost::system::error_code ec, size_t n) {
    if (ec || static_cast<size_t>(index) >= self->replicas_.size() || self->procs_[static_cast<size_t>(index)] != proc) return;
    ReplicaInfo& r = self->replicas_[static_cast<size_t>(index)];
    if (r.pid != pid) return;
    Proc& p = *proc;
    std::string line(boost::asio::buffers_begin(p.out_buf.data()), boost::asio::buffers_begin(p.out_buf.data()) + static_cast<ptrdiff_t>(n));
    p.out_buf.consume(n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (r.port == 0) {
      const size_t at = line.find("http://");
      if (at != std::string::npos) {
        const std::string rest = line.substr(at + 7);
        const size_t colon = rest.rfind(':');
        if (colon != std::string::npos) r.port = static_cast<uint16_t>(std::atoi(rest.c_str() + colon + 1));
      }
    }
    if (self->options_.log) self->options_.log(r.id + ": " + line);
    self->read_stdout(index);
  });
}

void Supervisor::poll_ready(int index) {
  Proc& p = *procs_[static_cast<size_t>(index)];
  const pid_t pid = replicas_[static_cast<size_t>(index)].pid;
  p.poll_timer.expires_after(kReadyPollInterval);
  p.poll_timer.async_wait([self = shared_from_this(), index, pid](boost::system::error_code ec) {
    if (ec) return;
    ReplicaInfo& r = self->replicas_[static_cast<size_t>(index)];
    if (r.pid != pid || r.phase != ReplicaPhase::kStarting || self->stopping_) return;
    if (std::chrono::steady_clock::now() > self->procs_[static_cast<size_t>(index)]->ready_deadline) {
      self->kill_group(index, SIGKILL);  // its exit schedules the restart
      if (self->options_.log) self->options_.log("supervisor: " + r.id + " not ready in time; killed");
      return;
    }
    if (r.port == 0) return self->poll_ready(index);
    UpstreamRequest req;
    req.host = r.host;
    req.port = r.port;
    req.target = "/ready";
    req.connect_timeout = std::chrono::milliseconds(1000);
    req.idle_timeout = std::chrono::milliseconds(2000);
    fetch(self->ex_, req, [self, index, pid](int status, std::string body) {
      if (static_cast<size_t>(index) >= self->replicas_.size()) return;  // a mode switch shrank the fleet meanwhile
      ReplicaInfo& r = self->replicas_[static_cast<size_t>(index)];
      if (r.pid != pid || r.phase != ReplicaPhase::kStarting) return;
      if (status == 200) {
        const auto j = nlohmann::json::parse(body, nullptr, false);
        // Only this start's own answer counts: a stale process on the port does not.
        if (j.is_object() && j.value("ready", false) && j.value("boot_id", "") == r.boot_id)
          return self->on_ready(index, j.value("max_num_seqs", 1), j.value("block_size", 16));
      }
      self->poll_ready(index);
    });
  });
}

void Supervisor::on_ready(int index, int32_t max_num_seqs, int32_t block_size) {
  ReplicaInfo& r = replicas_[static_cast<size_t>(index)];
  r.ready_at = now_epoch();
  r.max_num_seqs = std::max(1, max_num_seqs);
  r.block_size = block_size;
  procs_[static_cast<size_t>(index)]->backoff_s = options_.fleet.startup.restart_backoff_initial_s;
  if (options_.log) options_.log("supervisor: " + r.id + " ready at " + r.url());
  set_phase(index, ReplicaPhase::kReady);
  next_start_allowed_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.fleet.startup.stagger_s * 1000));
  pump();
}

void Supervisor::reap() {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const pid_t pid = replicas_[i].pid;
    if (pid <= 0) continue;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) on_exit(pid, status);
  }
  sigchld_.async_wait([self = shared_from_this()](boost::system::error_code ec, int) {
    if (!ec) self->reap();
  });
}

void Supervisor::on_exit(pid_t pid, int status) {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    ReplicaInfo& r = replicas_[i];
    if (r.pid != pid) continue;
    r.pid = 0;
    Proc& p = *procs_[i];
    boost::system::error_code ignored;
    p.out.close(ignored);
    p.poll_timer.cancel();
    p.kill_timer.cancel();
    const std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                              : "killed by signal " + std::to_string(WTERMSIG(status));
    if (options_.log) options_.log("supervisor: " + r.id + " (pid " + std::to_string(pid) + ") " + how);
    if (stopping_) {
      set_phase(static_cast<int>(i), ReplicaPhase::kStopped);
      if (all_stopped() && stopped_cb_) {
        auto cb = std::move(stopped_cb_);
        stopped_cb_ = nullptr;
        cb();
      }
    } else {
      schedule_restart(static_cast<int>(i), how);
    }
    return;
  }
}

void Supervisor::schedule_restart(int index, const std::string& why) {
  ReplicaInfo& r = replicas_[static_cast<size_t>(index)];
  Proc& p = *procs_[static_cast<size_t>(index)];
  ++r.restarts;
  set_phase(index, ReplicaPhase::kRestarting);
  const double delay = p.backoff_s;
  p.backoff_s = std::min(p.backoff_s * 2, options_.fleet.startup.restart_backoff_max_s);
  if (options_.log) options_.log("supervisor: restarting " + r.id + " in " + std::to_string(delay) + " s (" + why + ")");
  p.restart_timer.expires_after(std::chrono::milliseconds(static_cast<int64_t>(delay * 1000)));
  p.restart_timer.async_wait([self = shared_from_this(), index](boost::system::error_code ec) {
    if (ec || self->stopping_) return;
    self->start_queue_.push_back(index);
    self->pump();
  });
}

void Supervisor::kill_group(int index, int sig) {
  const pid_t pid = replicas_[static_cast<size_t>(index)].pid;
  if (pid > 0) ::killpg(pid, sig);
}

void Supervisor::mark_draining() {
  for (size_t i = 0; i < replicas_.size(); ++i)
    if (replicas_[i].phase == ReplicaPhase::kReady) set_phase(static_cast<int>(i), ReplicaPhase::kDraining);
}

void Supervisor::stop_all(std::chrono::milliseconds grace, std::function<void()> done) {
  stopping_ = true;
  start_queue_.clear();
  pump_timer_.cancel();
  for (auto& p : procs_) {
    p->restart_timer.cancel();
    p->poll_timer.cancel();
  }
  for (size_t i = 0; i < replicas_.size(); ++i) {
    if (replicas_[i].pid <= 0) {
      if (replicas_[i].phase != ReplicaPhase::kStopped) set_phase(static_cast<int>(i), ReplicaPhase::kStopped);
      continue;
    }
    kill_group(static_cast<int>(i), SIGTERM);
    Proc& p = *procs_[i];
    p.kill_timer.expires_after(grace);
    p.kill_timer.async_wait([self = shared_from_this(), i](boost::system::error_code ec) {
      if (!ec) self->kill_group(static_cast<int>(i), SIGKILL);
    });
  }
  if (all_stopped()) {
    boost::asio::post(ex_, std::move(done));
    return;
  }
  stopped_cb_ = std::move(done);
}

}  // namespace sy::gateway
