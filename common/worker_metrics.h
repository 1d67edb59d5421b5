// A worker's counters and its Prometheus metrics (names in docs/PROTOCOL.md; the gateway
// polls some of them), registered in one place so that the worker and the simulated
// worker (bench/simworker) expose the same families.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "common/metrics.h"
#include "common/throughput_meter.h"

namespace sy {

// Counters and gauges, updated by whoever runs requests (the engine thread), read by
// /metrics.
struct WorkerStats {
  std::atomic<int64_t> requests_running{0};
  std::atomic<int64_t> requests_waiting{0};
  std::atomic<int64_t> kv_blocks_used{0};
  std::atomic<int64_t> kv_blocks_total{0};
  std::atomic<int64_t> prefix_cache_hit_tokens_total{0};
  std::atomic<int64_t> prompt_tokens_total{0};
  // Prompt tokens computed, as their chunks run (a preempted request's recomputation
  // counts again; cached tokens never): what "tok/s of prompt computed" measures.
  std::atomic<int64_t> prefill_tokens_total{0};
  std::atomic<int64_t> generation_tokens_total{0};
  std::atomic<int64_t> requests_finished_total{0};
  std::atomic<int64_t> requests_aborted_total{0};
  std::atomic<int64_t> preemptions_total{0};
  // KV blocks copied to the host tier (evicted from the cache) and back (prefix hits there).
  std::atomic<int64_t> kv_host_blocks_capacity{0};  // its slots (0 until a background tier is in use)
  std::atomic<int64_t> kv_host_blocks_saved_total{0};
  std::atomic<int64_t> kv_host_blocks_loaded_total{0};
  std::atomic<int64_t> steps_total{0};
};

// Routes counted by switchyard_worker_http_requests_total{route}.
enum WorkerRoute { kRouteCompletions, kRouteChat, kRouteGenerate, kRouteKvEvents, kNumWorkerRoutes };

// The series a server updates itself; the registry owns them.
struct WorkerMetrics {
  Histogram* ttft = nullptr;  // arrival to first token, seconds
  Histogram* itl = nullptr;   // between two tokens of a request, seconds
  Histogram* e2e = nullptr;   // arrival to last byte queued, seconds
  Counter* requests_total[kNumWorkerRoutes] = {};
  // Tokens per second over the last 10 s, behind switchyard_worker_*_tokens_per_second.
  std::shared_ptr<ThroughputMeter> throughput;
};

// The worker's throughput now: its counters sampled into `meter` at the steady clock's time.
ThroughputMeter::Rates sample_throughput(ThroughputMeter& meter, const WorkerStats& stats);

// Registers every switchyard_worker_* family in `registry`: gauges and counters read
// from `stats` (which must outlive the registry), switchyard_worker_ready from `ready`,
// and the histograms and route counters returned.
WorkerMetrics register_worker_metrics(MetricsRegistry& registry, const WorkerStats& stats,
                                      std::function<bool()> ready);

}  // namespace sy
