// The fleet description the gateway runs (replicas.yaml): the model, the devices, the
// capacity modes, startup pacing, routing, queues, limits, listen addresses and keys.
// Documented field by field in docs/CONFIG.md. Command-line flags override fields after
// loading.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sy {

struct ModeConfig {
  std::string name;      // "throughput", "latency"
  int32_t replicas = 1;  // worker processes
  // Each replica's parallel shape: tensor-parallel ranks × prefill-context-parallel ranks
  // (DESIGN.md, "Parallel groups"). GPUs: one device per rank; CPU: ranks as threads of
  // the worker, sharing its cores. Not given: tp = devices_per_replica.
  int32_t tp = 1;
  int32_t pcp = 1;
  int32_t devices_per_replica = 1;  // GPUs per worker = tp × pcp
};

struct WorkerConfig {
  std::string binary;  // empty: switchyard-worker beside the gateway executable
  int32_t max_num_seqs = 8;
  int32_t kv_blocks = 0;         // 0: from kv_memory_gb
  double kv_memory_gb = 1.0;
  double kv_host_gb = 0;         // serve --kv-host-gb: host memory for evicted prefix blocks
  int32_t prefill_chunk = 256;
  int32_t block_size = 16;
  int32_t cpu_threads = 0;       // per CPU replica; 0: the host's cores divided among replicas
  // deterministic | fast | auto (serve --numerics): deterministic by default, because the
  // gateway's token-exact failover of sampled requests needs batch-invariant numerics
  // (docs/NUMERICS.md); fast trades that for speed on GPUs.
  std::string numerics = "deterministic";
  std::vector<std::string> extra_args;
};

struct StartupConfig {
  double stagger_s = 2.0;          // after a worker is ready, before the next one starts
  int32_t max_parallel_loads = 1;  // workers loading at once
  double ready_timeout_s = 300.0;
  double restart_backoff_initial_s = 1.0;
  double restart_backoff_max_s = 30.0;
  // Power-aware stagger (0: off): the next worker starts only when the GPUs' measured draw
  // plus the largest load spike measured so far is within this (policy/power_stagger.h).
  double max_power_w = 0;
  // The GPUs whose draw counts: NVML indexes ("0") or PCI bus ids ("0000:3B:00.0").
  // Empty: the fleet's devices, as NVML indexes.
  std::vector<std::string> power_gpus;
};

// The automatic mode switch (policy/mode_controller.h; docs/CONFIG.md, "Mode controller").
// In replicas.yaml `mode_controller: true`, or a mapping of these fields (enabled unless
// `enabled: false`).
struct ModeControllerConfig {
  bool enabled = false;
  double to_throughput_above = 8.0;  // load thresholds while a mode is unmeasured
  double to_latency_below = 2.0;
  double sustain_s = 30.0;
  double min_dwell_s = 120.0;
  double min_gain = 0.15;
  double horizon_s = 600.0;
  double default_switch_s = 60.0;
};

// SIGTERM: requests in flight get drain_grace_s to finish (or migrate); then the workers
// get SIGTERM and, after worker_stop_grace_s, SIGKILL.
struct ShutdownConfig {
  double drain_grace_s = 30.0;
  double worker_stop_grace_s = 10.0;
};

struct RoutingConfig {
  std::string policy = "prefix";  // prefix | round_robin | least_loaded
  double load_bound = 1.25;
  size_t approx_index_capacity = 100000;
  bool session_rebalance = false;  // policy::RouterOptions::session_rebalance
  double session_cost_tolerance = 1.0;  // policy::RouterOptions::session_cost_tolerance
  double recompute_weight = 100.0;      // policy::RouterOptions::recompute_weight
  std::string session_load = "count";   // count | activity: policy::RouterOptions::session_load_activity
  std::string lost_context = "sessions";  // sessions | kv: policy::RouterOptions::lost_context_by_kv
  std::string new_session = "sessions";   // sessions | kv: policy::RouterOptions::new_session_by_kv
};

// Hiding faults from clients (gateway/proxy_request.cpp): hedging before the first
// token, failover after it, stall detection. Delays follow recent latencies within bounds.
struct ResilienceConfig {
  bool hedge = true;
  std::string hedge_max_priority = "standard";  // hedge this class and more urgent ones
  // The hedge delay: factor × this quantile of recent dispatch-to-first-token times. The
  // median stays a healthy replica's time while up to half the attempts are slow (one
  // slow replica of four is a quarter: its p90 is the slow time, and hedging after
  // 2 × p90 never fired in bench/hedging_bench.sh).
  double hedge_delay_quantile = 0.5;
  double hedge_delay_factor = 3.0;
  double hedge_delay_min_s = 0.05, hedge_delay_max_s = 5.0;
  double budget_ratio = 0.1;         // extra attempts (hedges + retries) per client request
  int32_t max_attempts = 4;          // upstream attempts of one request, hedges included
  double stall_factor = 8.0;         // × the p99 of recent inter-token gaps
  double stall_min_s = 2.0, stall_max_s = 30.0;
  double first_token_timeout_s = 120.0;  // an attempt without a first token is failed over
};

struct QueueConfig {
  size_t interactive = 256, standard = 1024, batch = 4096;
  double aging_s = 10.0;
  int64_t quantum_tokens = 2048;
};

// The HTTP listeners' limits (common/http ServerOptions), per listener.
struct LimitsConfig {
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 4 * 1024 * 1024;
  int32_t max_connections = 1024;
  double header_timeout_s = 15.0;
  double body_timeout_s = 30.0;
  double idle_timeout_s = 60.0;
  double write_timeout_s = 30.0;
  size_t max_stream_buffer_bytes = 1024 * 1024;  // output waiting for one slow client
  size_t socket_send_buffer_bytes = 256 * 1024;  // SO_SNDBUF per connection; 0: the OS's autotuning
  int32_t max_tokens_default = 256;

  // The first unusable value as {field name, what is wrong}; none when all are usable.
  std::optional<std::pair<std::string, std::string>> problem() const;
};

// Optional limits of one API key (an `api_keys` entry written as a mapping).
struct KeyLimitConfig {
  double requests_per_s = 0;   // 0: none
  double burst = 0;            // 0: max(1, requests_per_s)
  int32_t max_concurrent = 0;  // 0: none
};

// Cross-origin requests from browsers: refused (no Access-Control-* headers) unless
// their origin is listed; "*" allows any.
struct CorsConfig {
  std::vector<std::string> allow_origins;
};

struct FleetConfig {
  std::string model;                // GGUF file or Hugging Face directory
  std::string served_model_name;    // the `model` clients name; default: the file's stem
  std::string listen = "127.0.0.1:8080";
  std::string admin_listen = "127.0.0.1:8081";  // admin routes: loopback unless configured
  std::vector<std::string> devices = {"cpu"};    // "cpu" or GPU ids ("0", "1", ...)
  std::map<std::string, ModeConfig> modes;
  std::string default_mode = "throughput";
  WorkerConfig worker;
  StartupConfig startup;
  ShutdownConfig shutdown;
  RoutingConfig routing;
  ResilienceConfig resilience;
  QueueConfig queues;
  LimitsConfig limits;
  std::vector<std::string> api_keys;  // empty: no key needed
  std::map<std::string, KeyLimitConfig> key_limits;  // api keys that have limits
  std::string admin_key;  // empty: admin routes need no key (then admin_listen must be loopback)
  CorsConfig cors;
  ModeControllerConfig mode_controller;
  // Template variables every chat request gets unless it sets them itself in its own
  // chat_template_kwargs (e.g. {"enable_thinking": false}): a JSON object, as text.
  std::string chat_template_kwargs = "{}";
  std::string nvml_library = "libnvidia-ml.so.1";  // what the gateway opens for startup.max_power_w

  // Loads and validates; throws std::runtime_error naming the file, the field and the
  // problem. Relative paths in the file (model, worker.binary) are resolved against the
  // file's folder. Whether those files exist is checked later, against the machine
  // (host_check.h).
  static FleetConfig load(const std::string& path);
  // As load, from text; paths are kept as written.
  static FleetConfig parse(const std::string& yaml_text, const std::string& label);
  // Makes relative model and worker.binary paths absolute, taken from `base_dir`.
  void resolve_paths(const std::string& base_dir);
  // Checks cross-field rules (modes fit the devices, the default mode exists, ...).
  void validate(const std::string& label) const;
};

// "host:port" → parts; throws std::runtime_error on a malformed address.
std::pair<std::string, uint16_t> split_host_port(const std::string& address);

// True for localhost, 127.0.0.0/8 and ::1: addresses other hosts cannot reach.
bool is_loopback_host(const std::string& host);

}  // namespace sy
