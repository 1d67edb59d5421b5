// The admin views, on the core strand: GET /admin/status (the fleet, its queues,
// counters, latencies and GPUs as one JSON object) and GET /admin/history (the last 15
// minutes, one point a second). docs/DASHBOARD.md reads them field by field.
#include <boost/asio/post.hpp>
#include <chrono>
#include <cmath>

#include "gateway/gateway.h"
#include "gateway/history.h"

namespace sy::gateway {
namespace {

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A reading, or null where the GPU gave none (JSON has no NaN).
nlohmann::json reading(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Per GPU (by uuid, each once however many replicas report it): power and its limit in
// watts, memory in bytes, utilization 0..1, temperature in °C, and who reports it.
nlohmann::json gpus_json(const std::vector<FleetGpu>& gpus) {
  nlohmann::json out = nlohmann::json::array();
  for (const FleetGpu& f : gpus) {
    const GpuSample& g = f.sample;
    out.push_back({{"uuid", g.uuid},
                   {"gpu", g.gpu},
                   {"name", g.name},
                   {"pci_bus_id", g.pci_bus_id},
                   {"replicas", f.replicas},
                   {"power_watts", reading(g.power_watts)},
                   {"power_limit_watts", reading(g.power_limit_watts)},
                   {"memory_used_bytes", reading(g.memory_used_bytes)},
                   {"memory_total_bytes", reading(g.memory_total_bytes)},
                   {"utilization_ratio", reading(g.utilization_ratio)},
                   {"temperature_celsius", reading(g.temperature_celsius)}});
  }
  return out;
}

// What the mode controller learned: per mode, each load bucket it has samples for (the
// bucket's load: 1, 2, 4, ... 64), and the measured switch into it.
nlohmann::json controller_json(const policy::ModeController& c) {
  nlohmann::json modes = nlohmann::json::object();
  const policy::ModeEstimates& est = c.estimates();
  for (const policy::FleetMode m : {policy::FleetMode::kThroughput, policy::FleetMode::kLatency}) {
    nlohmann::json rows = nlohmann::json::array();
    for (int b = 0; b < policy::ModeEstimates::kBuckets; ++b) {
      const policy::ModeEstimate& e = est.at(m, b);
      if (e.samples == 0) continue;
      rows.push_back({{"load", 1 << b}, {"aggregate_tok_s", e.aggregate_tok_s}, {"user_tok_s", e.user_tok_s},
                      {"queued_fraction", e.queued_fraction}, {"samples", e.samples}});
    }
    modes[policy::fleet_mode_name(m)] = {{"estimates", rows},
                                         {"switch_s", est.switch_measured(m) ? nlohmann::json(est.switch_s(m)) : nlohmann::json(nullptr)}};
  }
  return {{"reason", c.reason()}, {"modes", modes}};
}

}  // namespace

nlohmann::json Gateway::status_json() const {
  nlohmann::json replicas = nlohmann::json::array();
  const Fleet& fleet = core_->fleet();
  const double now_s = core_->clock()->now_s();
  for (size_t i = 0; i < fleet.size(); ++i) {
    const ReplicaInfo& r = fleet.info(i);
    const ReplicaLoad& l = fleet.load(i);
    replicas.push_back({{"id", r.id},
                        {"state", replica_phase_name(r.phase)},
                        {"pid", r.pid},
                        {"url", r.port ? r.url() : ""},
                        {"boot_id", r.boot_id},
                        {"devices", r.devices},
                        {"tp", r.tp},
                        {"pcp", r.pcp},
                        {"started_at", r.started_at},
                        {"ready_at", r.ready_at},
                        {"restarts", r.restarts},
                        {"load", {{"in_flight", l.in_flight}, {"capacity", r.max_num_seqs}, {"pending_prefill_tokens", l.pending_prefill_tokens},
                                  {"worker_running", l.worker_running}, {"worker_waiting", l.worker_waiting}}},
                        {"kv", {{"blocks_used", l.kv_blocks_used}, {"blocks_total", l.kv_blocks_total}, {"host_blocks_total", l.kv_host_blocks_total}}},
                        {"requests_total", l.requests_total},
                        {"hit_rate", l.prompt_tokens_total > 0 ? static_cast<double>(l.cached_tokens_total) / static_cast<double>(l.prompt_tokens_total) : 0.0},
                        {"prefill_s_per_token", l.prefill_s_per_token},
                        {"first_token_latency_s", l.first_token_latency_s},
                        {"prefill_cost_samples", l.cost_samples},
                        {"kv_events_connected", l.events_connected},
                        {"ejected", fleet.ejected(i)},
                        {"ejections", l.ejections_total}});
  }
  const auto& c = core_->counters();
  const auto& q = core_->queue();
  return {{"mode", mode_},
          {"switching", switching_},
          {"last_switch", last_switch_},
          {"modes", [&] {
             nlohmann::json m = nlohmann::json::array();
             for (const auto& [name, mc] : config_.modes) m.push_back(name);
             return m;
           }()},
          {"model", config_.served_model_name},
          {"router", core_->router_name()},
          {"replicas", replicas},
          {"queues", {{"interactive", q.size(PriorityClass::kInteractive)}, {"standard", q.size(PriorityClass::kStandard)}, {"batch", q.size(PriorityClass::kBatch)}}},
          {"in_flight", core_->in_flight()},
          {"counters", {{"requests", c.requests_total}, {"completed", c.completed}, {"failed", c.failed}, {"cancelled", c.cancelled},
                        {"rejected_queue_full", c.rejected_queue_full}, {"rejected_no_replica", c.rejected_no_replica},
                        {"retries", c.retries}, {"retries_denied", c.retries_denied}, {"failure_events", c.failure_events}, {"hedges", c.hedges},
                        {"hedges_won", c.hedges_won}, {"hedges_denied", c.hedges_denied}, {"hedges_deferred", c.hedges_deferred}, {"stalls", c.stalls}, {"preempted", c.preempted},
                        {"output_tokens", c.output_tokens}, {"prompt_tokens", c.prompt_tokens}, {"cached_tokens", c.cached_tokens}}},
          {"latency", {{"ttft_p50", core_->ttft().percentile(0.5)}, {"ttft_p90", core_->ttft().percentile(0.9)}, {"ttft_p99", core_->ttft().percentile(0.99)},
                       {"itl_p50", core_->itl().percentile(0.5)}, {"itl_p90", core_->itl().percentile(0.9)}, {"itl_p99", core_->itl().percentile(0.99)}}},
          {"gpus", gpus_json(gpu_table_.gpus(now_s))},
          {"power", {{"watts", gpu_table_.power_watts(now_s)}}},
          {"startup", startup_power_->json()},
          {"controller", controller_ ? controller_json(*controller_) : nlohmann::json(nullptr)},
          {"prefix_hit_rate", c.prompt_tokens > 0 ? static_cast<double>(c.cached_tokens) / static_cast<double>(c.prompt_tokens) : 0.0},
          {"time", wall_now()}};
}

void Gateway::record_history() {
  const auto& c = core_->counters();
  const auto& q = core_->queue();
  HistoryInputs in;
  in.output_tokens = c.output_tokens;
  in.prompt_tokens = c.prompt_tokens;
  in.cached_tokens = c.cached_tokens;
  in.ttft_p50 = core_->ttft().percentile(0.5);
  in.ttft_p99 = core_->ttft().percentile(0.99);
  in.itl_p50 = core_->itl().percentile(0.5);
  in.itl_p99 = core_->itl().percentile(0.99);
  in.queue_interactive = static_cast<int64_t>(q.size(PriorityClass::kInteractive));
  in.queue_standard = static_cast<int64_t>(q.size(PriorityClass::kStandard));
  in.queue_batch = static_cast<int64_t>(q.size(PriorityClass::kBatch));
  in.in_flight = core_->in_flight();
  // The gateway's own NVML readings (power-aware stagger) count as a reporter, so power
  // shows while a loading worker does not answer /metrics yet.
  if (startup_power_->enabled()) gpu_table_.update("gateway", startup_power_->samples(), core_->clock()->now_s());
  for (const FleetGpu& g : gpu_table_.gpus(core_->clock()->now_s()))
    if (std::isfinite(g.sample.power_watts)) in.gpu_power.emplace_back(g.sample.uuid, g.sample.power_watts);
  history_->record(in);
  history_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(History::kIntervalS)));
  history_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) record_history();
  });
}

void Gateway::handle_history(std::shared_ptr<http::Exchange> ex) {
  boost::asio::post(core_strand_, [this, ex] { ex->respond_json(http::Status::ok, history_->json().dump()); });
}

}  // namespace sy::gateway
