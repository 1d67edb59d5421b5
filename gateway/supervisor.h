// Starts, watches and stops the worker processes of the fleet.
//
// Workers start one at a time: the next is spawned only after the previous one is
// ready (its own /ready answers with the boot id given to it, never merely "something
// listens on the port") plus `stagger_s`, because loading several models at once has
// tripped power supplies. Each worker runs in its own process group, dies with the
// gateway (PR_SET_PDEATHSIG), and is restarted with exponential backoff when it crashes
// or does not become ready in time. Teardown signals whole process groups. An optional
// start gate (the power-aware stagger, gateway/startup_power.h) may hold a spawn back.
//
// All methods run on the executor given at construction (one strand); callbacks too.
#pragma once

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config/fleet_config.h"

namespace sy::gateway {

enum class ReplicaPhase { kStarting, kReady, kDraining, kRestarting, kStopped };
const char* replica_phase_name(ReplicaPhase p);

struct ReplicaInfo {
  int index = 0;
  std::string id;                 // "r0", "r1", ...
  ReplicaPhase phase = ReplicaPhase::kStopped;
  pid_t pid = 0;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string boot_id;            // fresh for every start
  std::vector<std::string> devices;
  int32_t tp = 1;                 // the replica's parallel shape (its mode's)
  int32_t pcp = 1;
  double started_at = 0;          // epoch seconds of the last spawn
  double ready_at = 0;            // epoch seconds the last start became ready (0: not yet)
  int32_t restarts = 0;
  int32_t max_num_seqs = 1;       // as the worker reported in /ready
  int32_t block_size = 16;
  std::string url() const { return "http://" + host + ":" + std::to_string(port); }
};

struct SupervisorOptions {
  FleetConfig fleet;              // model, worker settings, startup pacing, devices
  std::string gateway_id;         // goes into boot ids, for logs
  std::function<void(const std::string&)> log;
};

class Supervisor : public std::enable_shared_from_this<Supervisor> {
 public:
  Supervisor(boost::asio::any_io_executor ex, SupervisorOptions options);
  ~Supervisor();

  // Starts the fleet in `mode`, staggered. The fleet must be stopped.
  void start(const ModeConfig& mode);
  // Signals every worker's process group (SIGTERM, then SIGKILL after `grace`); `done`
  // runs when every worker has exited. No restarts happen meanwhile.
  void stop_all(std::chrono::milliseconds grace, std::function<void()> done);
  // Marks replicas as draining (for status; the gateway stops routing to them).
  void mark_draining();

  const std::vector<ReplicaInfo>& replicas() const { return replicas_; }
  const std::string& mode() const { return mode_; }
  bool all_stopped() const;

  // Called after every phase change of a replica.
  std::function<void(const ReplicaInfo&)> on_change;
  // Asked before each spawn (first start or restart) once pacing allows it: false defers
  // the spawn, asked again every kGateRecheck (the power-aware stagger). None: always.
  std::function<bool()> start_gate;
  static constexpr std::chrono::milliseconds kGateRecheck{250};

 private:
  struct Proc;
  void pump();
  void spawn(int index);
  void read_stdout(int index);
  void poll_ready(int index);
  void on_ready(int index, int32_t max_num_seqs, int32_t block_size);
  void on_exit(pid_t pid, int status);
  void schedule_restart(int index, const std::string& why);
  void reap();
  void set_phase(int index, ReplicaPhase p);
  void kill_group(int index, int sig);
  double now_epoch() const;
  std::vector<std::string> worker_argv(int index) const;
  std::vector<std::string> worker_env(int index) const;

  boost::asio::any_io_executor ex_;
  SupervisorOptions options_;
  std::string mode_;
  ModeConfig mode_config_;
  std::vector<ReplicaInfo> replicas_;
  // Shared: a pending read on a Proc's stdout holds its buffer, so a Proc dropped by a
  // mode switch lives until that read has completed (aborted).
  std::vector<std::shared_ptr<Proc>> procs_;
  std::deque<int> start_queue_;  // replicas waiting for their turn to spawn
  std::chrono::steady_clock::time_point next_start_allowed_;
  boost::asio::steady_timer pump_timer_;
  boost::asio::signal_set sigchld_;
  bool stopping_ = false;
  std::function<void()> stopped_cb_;
  uint64_t boot_counter_ = 0;
};

}  // namespace sy::gateway
