#include "common/config/fleet_config.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sy {
namespace {

class Reader {
 public:
  explicit Reader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error(label_ + ": " + field + ": " + what);
  }

  template <typename T>
  void get(const YAML::Node& node, const std::string& key, const std::string& path, T& out) const {
    const YAML::Node v = node[key];
    if (!v) return;
    try {
      out = v.as<T>();
    } catch (const YAML::Exception&) {
      fail(path + key, "has the wrong type");
    }
  }

  // Every key of `node` must be one of `known`: a typo is an error, not a silent default.
  void only(const YAML::Node& node, const std::string& path, std::initializer_list<const char*> known) const {
    if (!node) return;
    if (!node.IsMap()) fail(path.empty() ? "top level" : path.substr(0, path.size() - 1), "must be a mapping");
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string k = kv.first.as<std::string>();
      if (!seen.insert(k).second) fail(path + k, "appears twice");
      bool ok = false;
      for (const char* kn : known) ok = ok || k == kn;
      if (!ok) fail(path + k, "unknown field");
    }
  }

 private:
  std::string label_;
};

// `api_keys`: each entry a key, or a mapping of the key and its limits. Errors name the
// entry by position, never by the key (a secret).
void read_api_keys(const Reader& r, const YAML::Node& keys, FleetConfig& c) {
  if (!keys) return;
  if (!keys.IsSequence()) r.fail("api_keys", "must be a list (each a key, or {key, requests_per_s, burst, max_concurrent})");
  for (size_t i = 0; i < keys.size(); ++i) {
    const YAML::Node k = keys[i];
    const std::string at = "api_keys[" + std::to_string(i) + "]";
    std::string key;
    if (k.IsScalar()) {
      key = k.as<std::string>();
    } else if (k.IsMap()) {
      const std::string p = at + ".";
      r.only(k, p, {"key", "requests_per_s", "burst", "max_concurrent"});
      r.get(k, "key", p, key);
      KeyLimitConfig l;
      r.get(k, "requests_per_s", p, l.requests_per_s);
      r.get(k, "burst", p, l.burst);
      r.get(k, "max_concurrent", p, l.max_concurrent);
      if (!(l.requests_per_s >= 0) || !(l.burst >= 0) || l.max_concurrent < 0) r.fail(at, "limits must not be negative");
      if (!key.empty()) c.key_limits[key] = l;
    } else {
      r.fail(at, "must be a key or a mapping with `key`");
    }
    if (key.empty()) r.fail(at, "the key must be a non-empty string");
    if (std::find(c.api_keys.begin(), c.api_keys.end(), key) != c.api_keys.end()) r.fail(at, "repeats an earlier key");
    c.api_keys.push_back(key);
  }
}

// A YAML value as JSON: plain scalars read as YAML 1.2's core schema does (null, true /
// false, integers, floats), quoted ones as strings.
nlohmann::json yaml_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : n) a.push_back(yaml_to_json(v));
    return a;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(n, i) && s.find_first_of(".eE") == std::string::npos) return i;
  double d = 0;
  if (YAML::convert<double>::decode(n, d)) return d;
  return s;
}

}  // namespace

FleetConfig FleetConfig::parse(const std::string& text, const std::string& label) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(label + ": invalid YAML: " + e.what());
  }
  Reader r(label);
  FleetConfig c;
  r.only(root, "", {"model", "served_model_name", "listen", "admin_listen", "devices", "modes", "default_mode", "worker", "startup", "shutdown",
                   "routing", "resilience", "queues", "limits", "api_keys", "admin_key", "cors", "mode_controller", "chat_template_kwargs",
                   "nvml_library"});
  r.get(root, "model", "", c.model);
  r.get(root, "served_model_name", "", c.served_model_name);
  r.get(root, "listen", "", c.listen);
  r.get(root, "admin_listen", "", c.admin_listen);
  if (root["devices"]) {
    c.devices.clear();
    if (!root["devices"].IsSequence()) r.fail("devices", "must be a list (\"cpu\" or GPU ids)");
    for (const auto& d : root["devices"]) c.devices.push_back(d.as<std::string>());
  }
  if (const YAML::Node modes = root["modes"]) {
    if (!modes.IsMap()) r.fail("modes", "must be a mapping of mode names");
    for (const auto& kv : modes) {
      ModeConfig m;
      m.name = kv.first.as<std::string>();
      const std::string p = "modes." + m.name + ".";
      if (kv.second["parallel"]) r.fail(p + "parallel", "is replaced by tp and pcp (e.g. {replicas: 1, tp: 4})");
      r.only(kv.second, p, {"replicas", "devices_per_replica", "tp", "pcp"});
      r.get(kv.second, "replicas", p, m.replicas);
      r.get(kv.second, "devices_per_replica", p, m.devices_per_replica);
      r.get(kv.second, "tp", p, m.tp);
      r.get(kv.second, "pcp", p, m.pcp);
      if (!kv.second["tp"] && !kv.second["pcp"] && kv.second["devices_per_replica"]) m.tp = m.devices_per_replica;
      if (!kv.second["devices_per_replica"]) m.devices_per_replica = m.tp * m.pcp;
      c.modes[m.name] = m;
    }
  }
  r.get(root, "default_mode", "", c.default_mode);
  if (const YAML::Node w = root["worker"]) {
    r.only(w, "worker.", {"binary", "max_num_seqs", "kv_blocks", "kv_memory_gb", "kv_host_gb", "prefill_chunk", "block_size", "cpu_threads", "numerics", "extra_args"});
    r.get(w, "binary", "worker.", c.worker.binary);
    r.get(w, "max_num_seqs", "worker.", c.worker.max_num_seqs);
    r.get(w, "kv_blocks", "worker.", c.worker.kv_blocks);
    r.get(w, "kv_memory_gb", "worker.", c.worker.kv_memory_gb);
    r.get(w, "kv_host_gb", "worker.", c.worker.kv_host_gb);
    r.get(w, "prefill_chunk", "worker.", c.worker.prefill_chunk);
    r.get(w, "block_size", "worker.", c.worker.block_size);
    r.get(w, "cpu_threads", "worker.", c.worker.cpu_threads);
    r.get(w, "numerics", "worker.", c.worker.numerics);
    r.get(w, "extra_args", "worker.", c.worker.extra_args);
  }
  if (const YAML::Node s = root["startup"]) {
    r.only(s, "startup.", {"stagger_s", "max_parallel_loads", "ready_timeout_s", "restart_backoff_initial_s", "restart_backoff_max_s",
                           "max_power_w", "power_gpus"});
    r.get(s, "max_power_w", "startup.", c.startup.max_power_w);
    r.get(s, "power_gpus", "startup.", c.startup.power_gpus);
    r.get(s, "stagger_s", "startup.", c.startup.stagger_s);
    r.get(s, "max_parallel_loads", "startup.", c.startup.max_parallel_loads);
    r.get(s, "ready_timeout_s", "startup.", c.startup.ready_timeout_s);
    r.get(s, "restart_backoff_initial_s", "startup.", c.startup.restart_backoff_initial_s);
    r.get(s, "restart_backoff_max_s", "startup.", c.startup.restart_backoff_max_s);
  }
  if (const YAML::Node s = root["shutdown"]) {
    r.only(s, "shutdown.", {"drain_grace_s", "worker_stop_grace_s"});
    r.get(s, "drain_grace_s", "shutdown.", c.shutdown.drain_grace_s);
    r.get(s, "worker_stop_grace_s", "shutdown.", c.shutdown.worker_stop_grace_s);
  }
  if (const YAML::Node s = root["routing"]) {
    r.only(s, "routing.", {"policy", "load_bound", "approx_index_capacity", "session_rebalance", "session_cost_tolerance",
                             "recompute_weight", "session_load", "lost_context", "new_session"});
    r.get(s, "policy", "routing.", c.routing.policy);
    r.get(s, "load_bound", "routing.", c.routing.load_bound);
    r.get(s, "approx_index_capacity", "routing.", c.routing.approx_index_capacity);
    r.get(s, "session_rebalance", "routing.", c.routing.session_rebalance);
    r.get(s, "session_cost_tolerance", "routing.", c.routing.session_cost_tolerance);
    r.get(s, "recompute_weight", "routing.", c.routing.recompute_weight);
    r.get(s, "session_load", "routing.", c.routing.session_load);
    r.get(s, "lost_context", "routing.", c.routing.lost_context);
    r.get(s, "new_session", "routing.", c.routing.new_session);
  }
  if (const YAML::Node s = root["resilience"]) {
    const std::string p = "resilience.";
    ResilienceConfig& x = c.resilience;
    r.only(s, p, {"hedge", "hedge_max_priority", "hedge_delay_factor", "hedge_delay_quantile", "hedge_delay_min_s", "hedge_delay_max_s", "budget_ratio",
                  "max_attempts", "stall_factor", "stall_min_s", "stall_max_s", "first_token_timeout_s"});
    r.get(s, "hedge", p, x.hedge);
    r.get(s, "hedge_max_priority", p, x.hedge_max_priority);
    r.get(s, "hedge_delay_factor", p, x.hedge_delay_factor);
    r.get(s, "hedge_delay_quantile", p, x.hedge_delay_quantile);
    r.get(s, "hedge_delay_min_s", p, x.hedge_delay_min_s);
    r.get(s, "hedge_delay_max_s", p, x.hedge_delay_max_s);
    r.get(s, "budget_ratio", p, x.budget_ratio);
    r.get(s, "max_attempts", p, x.max_attempts);
    r.get(s, "stall_factor", p, x.stall_factor);
    r.get(s, "stall_min_s", p, x.stall_min_s);
    r.get(s, "stall_max_s", p, x.stall_max_s);
    r.get(s, "first_token_timeout_s", p, x.first_token_timeout_s);
  }
  if (const YAML::Node s = root["queues"]) {
    r.only(s, "queues.", {"interactive", "standard", "batch", "aging_s", "quantum_tokens"});
    r.get(s, "interactive", "queues.", c.queues.interactive);
    r.get(s, "standard", "queues.", c.queues.standard);
    r.get(s, "batch", "queues.", c.queues.batch);
    r.get(s, "aging_s", "queues.", c.queues.aging_s);
    r.get(s, "quantum_tokens", "queues.", c.queues.quantum_tokens);
  }
  if (const YAML::Node s = root["limits"]) {
    r.only(s, "limits.", {"max_header_bytes", "max_body_bytes", "max_connections", "header_timeout_s", "body_timeout_s", "idle_timeout_s",
                          "write_timeout_s", "max_stream_buffer_bytes", "socket_send_buffer_bytes", "max_tokens_default"});
    r.get(s, "max_header_bytes", "limits.", c.limits.max_header_bytes);
    r.get(s, "max_body_bytes", "limits.", c.limits.max_body_bytes);
    r.get(s, "max_connections", "limits.", c.limits.max_connections);
    r.get(s, "header_timeout_s", "limits.", c.limits.header_timeout_s);
    r.get(s, "body_timeout_s", "limits.", c.limits.body_timeout_s);
    r.get(s, "idle_timeout_s", "limits.", c.limits.idle_timeout_s);
    r.get(s, "write_timeout_s", "limits.", c.limits.write_timeout_s);
    r.get(s, "max_stream_buffer_bytes", "limits.", c.limits.max_stream_buffer_bytes);
    r.get(s, "socket_send_buffer_bytes", "limits.", c.limits.socket_send_buffer_bytes);
    r.get(s, "max_tokens_default", "limits.", c.limits.max_tokens_default);
  }
  read_api_keys(r, root["api_keys"], c);
  r.get(root, "admin_key", "", c.admin_key);
  if (const YAML::Node s = root["cors"]) {
    r.only(s, "cors.", {"allow_origins"});
    r.get(s, "allow_origins", "cors.", c.cors.allow_origins);
  }
  if (const YAML::Node m = root["mode_controller"]) {
    if (m.IsMap()) {
      r.only(m, "mode_controller.", {"enabled", "to_throughput_above", "to_latency_below", "sustain_s", "min_dwell_s", "min_gain",
                                     "horizon_s", "default_switch_s"});
      ModeControllerConfig& mc = c.mode_controller;
      mc.enabled = true;
      r.get(m, "enabled", "mode_controller.", mc.enabled);
      r.get(m, "to_throughput_above", "mode_controller.", mc.to_throughput_above);
      r.get(m, "to_latency_below", "mode_controller.", mc.to_latency_below);
      r.get(m, "sustain_s", "mode_controller.", mc.sustain_s);
      r.get(m, "min_dwell_s", "mode_controller.", mc.min_dwell_s);
      r.get(m, "min_gain", "mode_controller.", mc.min_gain);
      r.get(m, "horizon_s", "mode_controller.", mc.horizon_s);
      r.get(m, "default_switch_s", "mode_controller.", mc.default_switch_s);
    } else {
      r.get(root, "mode_controller", "", c.mode_controller.enabled);
    }
  }
  if (const YAML::Node kw = root["chat_template_kwargs"]) {
    if (!kw.IsMap()) r.fail("chat_template_kwargs", "must be a mapping of template variables");
    c.chat_template_kwargs = yaml_to_json(kw).dump();
  }
  r.get(root, "nvml_library", "", c.nvml_library);
  if (c.served_model_name.empty()) c.served_model_name = std::filesystem::path(c.model).stem().string();
  c.validate(label);
  return c;
}

FleetConfig FleetConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  FleetConfig c = parse(ss.str(), path);
  c.resolve_paths(std::filesystem::absolute(path).parent_path().string());
  return c;
}

void FleetConfig::resolve_paths(const std::string& base_dir) {
  // A path relative to the file means the same whatever folder the gateway starts in.
  auto resolve = [&](std::string& p) {
    if (!p.empty() && std::filesystem::path(p).is_relative()) p = (std::filesystem::path(base_dir) / p).lexically_normal().string();
  };
  resolve(model);
  resolve(worker.binary);
}

void FleetConfig::validate(const std::string& label) const {
  auto fail = [&](const std::string& field, const std::string& what) { throw std::runtime_error(label + ": " + field + ": " + what); };
  if (model.empty()) fail("model", "is required (a GGUF file or a Hugging Face directory)");
  if (devices.empty()) fail("devices", "needs at least one device");
  const bool cpu = devices.size() == 1 && devices[0] == "cpu";
  // A GPU listed more than once is shared: replica i takes the i-th slice of
  // devices_per_replica entries, so ["0", "0", "0", "0"] puts four TP1 replicas on GPU 0,
  // each with its own worker.kv_blocks / kv_memory_gb. One replica's slice must not
  // name a GPU twice (its ranks would share a device).
  for (const auto& d : devices) {
    if (d == "cpu" && !cpu) fail("devices", "\"cpu\" cannot be mixed with GPU ids");
    if (d != "cpu" && (d.empty() || d.size() > 4 || d.find_first_not_of("0123456789") != std::string::npos))
      fail("devices", "'" + d + "' is neither cpu nor a GPU index (0, 1, ...)");
  }
  if (modes.empty()) fail("modes", "needs at least one mode");
  if (!modes.count(default_mode)) fail("default_mode", "'" + default_mode + "' is not one of the modes");
  for (const auto& [name, m] : modes) {
    if (m.replicas < 1 || m.replicas > 64) fail("modes." + name + ".replicas", "must be 1 to 64");
    if (m.tp < 1 || m.tp > 64) fail("modes." + name + ".tp", "must be 1 to 64");
    if (m.devices_per_replica < 1) fail("modes." + name + ".devices_per_replica", "must be at least 1");
    if (m.pcp < 1 || m.pcp > 64) fail("modes." + name + ".pcp", "must be 1 to 64");
    if (!cpu && m.pcp > 15)  // the GPU merge of partial attention takes at most 16 parts (docs/CONTEXT_PARALLEL.md)
      fail("modes." + name + ".pcp", "must be 1 to 15 over GPUs");
    if (!cpu && m.devices_per_replica != m.tp * m.pcp)
      fail("modes." + name + ".devices_per_replica", "must equal tp × pcp (" + std::to_string(m.tp * m.pcp) + ")");
    if (!cpu && m.replicas * m.devices_per_replica > static_cast<int32_t>(devices.size()))
      fail("modes." + name, std::to_string(m.replicas) + " replicas × " + std::to_string(m.devices_per_replica) + " devices need " +
                                std::to_string(m.replicas * m.devices_per_replica) + " devices, more than the " +
                                std::to_string(devices.size()) + " listed in devices");
    for (int32_t i = 0; !cpu && (i + 1) * m.devices_per_replica <= static_cast<int32_t>(devices.size()); ++i) {
      std::set<std::string> group;
      for (int32_t k = 0; k < m.devices_per_replica; ++k)
        if (!group.insert(devices[static_cast<size_t>(i * m.devices_per_replica + k)]).second)
          fail("modes." + name, "replica " + std::to_string(i) + " would have GPU '" + devices[static_cast<size_t>(i * m.devices_per_replica + k)] +
                                    "' twice in its group (a GPU may be listed again only for another replica)");
    }
  }
  if (worker.max_num_seqs < 1 || worker.max_num_seqs > 4096) fail("worker.max_num_seqs", "must be 1 to 4096");
  if (worker.prefill_chunk < 1) fail("worker.prefill_chunk", "must be positive");
  if (worker.block_size < 1 || worker.block_size > 1024) fail("worker.block_size", "must be 1 to 1024");
  if (worker.numerics != "deterministic" && worker.numerics != "fast" && worker.numerics != "auto")
    fail("worker.numerics", "must be deterministic, fast or auto");
  if (worker.kv_blocks < 0 || !(worker.kv_memory_gb > 0)) fail("worker", "kv_blocks must be >= 0 and kv_memory_gb > 0");
  if (!(worker.kv_host_gb >= 0) || worker.kv_host_gb > 1e6) fail("worker.kv_host_gb", "must be 0 or more (GiB of host memory)");
  for (const auto& [name, m] : modes)
    if (worker.kv_host_gb > 0 && m.pcp > 1 && !cpu)
      fail("worker.kv_host_gb", "the KV host tier is not supported with context parallelism on GPUs yet (modes." + name +
                                    ".pcp is " + std::to_string(m.pcp) + ")");
  if (!(shutdown.drain_grace_s >= 0) || !(shutdown.worker_stop_grace_s >= 0) || shutdown.drain_grace_s > 86400 ||
      shutdown.worker_stop_grace_s > 86400)
    fail("shutdown", "drain_grace_s and worker_stop_grace_s between 0 and 86400");
  if (startup.stagger_s < 0 || startup.max_parallel_loads < 1 || !(startup.ready_timeout_s > 0)) fail("startup", "stagger_s >= 0, max_parallel_loads >= 1, ready_timeout_s > 0");
  {
    const ModeControllerConfig& m = mode_controller;
    if (!(m.to_latency_below >= 0) || !(m.to_throughput_above > m.to_latency_below) || !(m.sustain_s >= 0) || !(m.min_dwell_s >= 0) ||
        !(m.min_gain >= 0) || !(m.horizon_s > 0) || !(m.default_switch_s >= 0))
      fail("mode_controller", "needs 0 <= to_latency_below < to_throughput_above, sustain_s, min_dwell_s, min_gain, default_switch_s >= 0 "
                              "and horizon_s > 0");
  }
  if (!(startup.max_power_w >= 0)) fail("startup.max_power_w", "must be >= 0 (0: off)");
  if (startup.max_power_w > 0 && cpu && startup.power_gpus.empty())
    fail("startup.power_gpus", "max_power_w needs GPUs to measure: the devices are cpu, so list the GPUs whose draw counts");
  for (const auto& g : startup.power_gpus)
    if (g.empty() || (g.find(':') == std::string::npos && g.find_first_not_of("0123456789") != std::string::npos))
      fail("startup.power_gpus", "'" + g + "' is neither an NVML index (0, 1, ...) nor a PCI bus id (0000:3B:00.0)");
  if (routing.policy != "prefix" && routing.policy != "approximate" && routing.policy != "session_affinity" &&
      routing.policy != "round_robin" && routing.policy != "least_loaded")
    fail("routing.policy", "must be prefix, approximate, session_affinity, round_robin or least_loaded");
  if (!(routing.load_bound >= 1.0)) fail("routing.load_bound", "must be >= 1");
  if (!(routing.session_cost_tolerance >= 1.0 && routing.session_cost_tolerance <= 100.0))
    fail("routing.session_cost_tolerance", "must be in [1, 100]");
  if (!(routing.recompute_weight >= 1.0 && routing.recompute_weight <= 100.0))
    fail("routing.recompute_weight", "must be in [1, 100]");
  if (routing.session_load != "count" && routing.session_load != "activity")
    fail("routing.session_load", "must be count or activity");
  if (routing.lost_context != "sessions" && routing.lost_context != "kv")
    fail("routing.lost_context", "must be sessions or kv");
  if (routing.new_session != "sessions" && routing.new_session != "kv")
    fail("routing.new_session", "must be sessions or kv");
  {
    const ResilienceConfig& x = resilience;
    const std::string& hp = x.hedge_max_priority;
    if (hp != "interactive" && hp != "standard" && hp != "batch") fail("resilience.hedge_max_priority", "must be interactive, standard or batch");
    if (!(x.hedge_delay_min_s > 0) || !(x.hedge_delay_max_s >= x.hedge_delay_min_s) || !(x.hedge_delay_factor > 0) ||
        !(x.hedge_delay_quantile > 0 && x.hedge_delay_quantile < 1))
      fail("resilience.hedge_delay_*", "need 0 < min <= max, a positive factor and a quantile in (0, 1)");
    if (!(x.stall_min_s > 0) || !(x.stall_max_s >= x.stall_min_s) || !(x.stall_factor > 0))
      fail("resilience.stall_*", "need 0 < min <= max and a positive factor");
    if (!(x.budget_ratio >= 0) || !(x.budget_ratio <= 1)) fail("resilience.budget_ratio", "must be in [0, 1]");
    if (x.max_attempts < 1 || x.max_attempts > 16) fail("resilience.max_attempts", "must be in [1, 16]");
    if (!(x.first_token_timeout_s > 0)) fail("resilience.first_token_timeout_s", "must be > 0");
  }
  if (auto p = limits.problem()) fail("limits." + p->first, p->second);
  if (!admin_key.empty() && std::find(api_keys.begin(), api_keys.end(), admin_key) != api_keys.end())
    fail("admin_key", "must differ from every api key (user keys cannot call admin routes)");
  for (const auto& origin : cors.allow_origins) {
    const size_t scheme = origin.find("://");
    const bool ok = origin == "*" || ((origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0) &&
                                      origin.find('/', scheme + 3) == std::string::npos && origin.size() > scheme + 3);
    if (!ok) fail("cors.allow_origins", "'" + origin + "' is not an origin (scheme://host[:port], or *)");
  }
  for (const auto& [field, address] : {std::pair<const char*, const std::string&>{"listen", listen}, {"admin_listen", admin_listen}}) {
    try {
      split_host_port(address);
    } catch (const std::runtime_error& e) {
      fail(field, e.what());
    }
  }
  // Admin routes change the fleet: without a key they must not be reachable from other hosts.
  if (admin_key.empty() && !is_loopback_host(split_host_port(admin_listen).first))
    fail("admin_listen", "'" + admin_listen + "' is reachable from other hosts: set admin_key, or listen on loopback");
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::optional<std::pair<std::string, std::string>> LimitsConfig::problem() const {
  if (max_header_bytes < 1024) return std::pair{"max_header_bytes", "must be at least 1024"};
  if (max_body_bytes < 1024) return std::pair{"max_body_bytes", "must be at least 1024"};
  if (max_connections < 1) return std::pair{"max_connections", "must be at least 1"};
  for (auto [name, v] : {std::pair{"header_timeout_s", header_timeout_s}, {"body_timeout_s", body_timeout_s},
                         {"idle_timeout_s", idle_timeout_s}, {"write_timeout_s", write_timeout_s}})
    if (!(v > 0) || v > 1e6) return std::pair{std::string(name), std::string("must be positive (seconds)")};
  if (max_stream_buffer_bytes < 4096) return std::pair{"max_stream_buffer_bytes", "must be at least 4096"};
  if (socket_send_buffer_bytes != 0 && (socket_send_buffer_bytes < 4096 || socket_send_buffer_bytes > (size_t{1} << 30)))
    return std::pair{"socket_send_buffer_bytes", "must be 0 (the OS's) or 4096 to 1 GiB"};
  return std::nullopt;
}

std::pair<std::string, uint16_t> split_host_port(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) throw std::runtime_error("address '" + address + "' is not host:port");
  const std::string port = address.substr(colon + 1);
  int p = -1;
  try {
    size_t used = 0;
    p = std::stoi(port, &used);
    if (used != port.size()) p = -1;
  } catch (const std::exception&) {
  }
  if (p < 0 || p > 65535) throw std::runtime_error("address '" + address + "' has no valid port");
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, static_cast<uint16_t>(p)};
}

}  // namespace sy
