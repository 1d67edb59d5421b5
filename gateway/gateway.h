// switchyard-gateway: the front door. Owns the fleet described in replicas.yaml (through
// the supervisor), serves the OpenAI API on `listen` by tokenizing, queueing and routing
// each request to a worker, and serves the admin API, metrics and dashboard on
// `admin_listen` (loopback unless configured otherwise).
//
// Threads: one io_context run by several threads. The core strand owns the supervisor,
// the fleet's routing state, the queues, the mode and the admin event subscribers;
// each client connection's strand runs its request's relay.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <memory>
#include <string>

#include "common/chat_template.h"
#include "common/config/fleet_config.h"
#include "common/http/server.h"
#include "common/metrics.h"
#include "common/protocol/openai.h"
#include "gateway/core.h"
#include "gateway/cors.h"
#include "gateway/gpu_table.h"
#include "gateway/history.h"
#include "gateway/key_limits.h"
#include "gateway/proxy_request.h"
#include "gateway/startup_power.h"
#include "gateway/supervisor.h"
#include "policy/mode_controller.h"

namespace sy::gateway {

class Gateway {
 public:
  explicit Gateway(FleetConfig config);
  ~Gateway();

  // Runs until SIGTERM or SIGINT, then drains and stops the fleet. Returns the exit code.
  int run();

 private:
  void load_model();
  void add_front_routes(http::Router& r);
  void add_admin_routes(http::Router& r);
  // The request's API key into `key`; where keys are configured and it is not one of
  // them, answers 401 and returns false (the API routes and /v1/models share this).
  bool admit_user(http::Exchange& ex, std::string& key) const;
  bool authorized_admin(const http::Exchange& ex) const;

  void handle_openai(ApiKind kind, std::shared_ptr<http::Exchange> ex);
  void handle_models(std::shared_ptr<http::Exchange> ex);
  void handle_model(std::shared_ptr<http::Exchange> ex);
  void handle_status(std::shared_ptr<http::Exchange> ex);
  void handle_events(std::shared_ptr<http::Exchange> ex);
  void handle_mode(std::shared_ptr<http::Exchange> ex);
  void handle_metrics(std::shared_ptr<http::Exchange> ex);
  void handle_history(std::shared_ptr<http::Exchange> ex);
  void register_counters();

  // Core strand.
  nlohmann::json status_json() const;
  void publish_event(const nlohmann::json& event);
  void on_replica_change(const ReplicaInfo& r);
  void switch_mode(const std::string& mode);
  void wait_drained(std::function<void()> then);
  void poll_worker_metrics();
  void record_history();  // a point now, and again in History::kIntervalS
  void shutdown(int signal);

  FleetConfig config_;
  boost::asio::io_context ioc_;
  boost::asio::strand<boost::asio::io_context::executor_type> core_strand_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  ModelLimits limits_;
  uint64_t fingerprint_ = 0;

  std::shared_ptr<GatewayCore> core_;
  std::shared_ptr<Supervisor> supervisor_;
  std::shared_ptr<ProxyContext> ctx_;
  std::unique_ptr<http::HttpServer> front_;
  std::unique_ptr<http::HttpServer> admin_;  // null when it shares the front listener
  MetricsRegistry metrics_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> shutting_down_{false};

  // Core strand state.
  std::string mode_;
  bool switching_ = false;
  nlohmann::json last_switch_ = nullptr;
  std::vector<std::shared_ptr<http::Exchange>> event_subscribers_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer metrics_timer_;
  boost::asio::steady_timer history_timer_;
  boost::asio::signal_set signals_;
  double switch_started_ = 0;
  policy::SteadyClock clock_;
  GpuTable gpu_table_;  // the workers' GPUs from their /metrics, by uuid
  std::unique_ptr<History> history_;  // on core_'s clock
  std::unique_ptr<StartupPower> startup_power_;  // the power-aware stagger; reads NVML when enabled
  std::unique_ptr<policy::ModeController> controller_;  // when replicas.yaml enables it
  double controller_polled_s_ = 0;  // the controller's last sample: when, on core_'s clock,
  int64_t controller_tokens_ = 0;   // and the output tokens counted then
  std::shared_ptr<KeyLimits> key_limits_;  // per-key rate and concurrency limits
  Cors cors_;
};

}  // namespace sy::gateway
