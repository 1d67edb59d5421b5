#include "common/worker_metrics.h"

#include <chrono>

namespace sy {

ThroughputMeter::Rates sample_throughput(ThroughputMeter& meter, const WorkerStats& st) {
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return meter.sample(now, st.generation_tokens_total.load(), st.prefill_tokens_total.load());
}

WorkerMetrics register_worker_metrics(MetricsRegistry& m, const WorkerStats& st,
                                      std::function<bool()> ready) {
  auto gauge = [&](const char* name, const char* help, const std::atomic<int64_t>& v) {
    m.gauge_fn(name, help, [&v] { return static_cast<double>(v.load()); });
  };
  auto counter = [&](const char* name, const char* help, const std::atomic<int64_t>& v) {
    m.counter_fn(name, help, [&v] { return static_cast<double>(v.load()); });
  };
  gauge("switchyard_worker_requests_running", "Requests scheduled in the running batch.",
        st.requests_running);
  gauge("switchyard_worker_requests_waiting", "Requests waiting for admission (or preempted).",
        st.requests_waiting);
  gauge("switchyard_worker_kv_blocks_used", "KV cache blocks in use by requests.",
        st.kv_blocks_used);
  gauge("switchyard_worker_kv_blocks_capacity", "KV cache blocks in all (used and free).",
        st.kv_blocks_total);
  counter("switchyard_worker_prefix_cache_hit_tokens_total",
          "Prompt tokens served from the prefix cache.", st.prefix_cache_hit_tokens_total);
  counter("switchyard_worker_prompt_tokens_total", "Prompt tokens of accepted requests.",
          st.prompt_tokens_total);
  counter("switchyard_worker_prefill_tokens_total",
          "Prompt tokens computed (recomputation after preemption included, cached ones not).",
          st.prefill_tokens_total);
  counter("switchyard_worker_generation_tokens_total", "Tokens generated.",
          st.generation_tokens_total);
  counter("switchyard_worker_requests_finished_total",
          "Requests that finished (stop, length or error).", st.requests_finished_total);
  counter("switchyard_worker_requests_aborted_total",
          "Requests cancelled (client gone or shutdown).", st.requests_aborted_total);
  counter("switchyard_worker_preemptions_total",
          "Requests preempted for KV space (recomputed later).", st.preemptions_total);
  gauge("switchyard_worker_kv_host_blocks_capacity",
        "KV host tier slots (0 without one, and until one allocated in the background is in use).",
        st.kv_host_blocks_capacity);
  counter("switchyard_worker_kv_host_blocks_saved_total",
          "KV blocks evicted from the cache and kept in the host tier.", st.kv_host_blocks_saved_total);
  counter("switchyard_worker_kv_host_blocks_loaded_total",
          "KV blocks of prefix hits copied back from the host tier.", st.kv_host_blocks_loaded_total);
  counter("switchyard_worker_engine_steps_total", "Engine steps run.", st.steps_total);
  m.gauge_fn("switchyard_worker_ready", "1 once the engine has run its warm-up step.",
             [ready = std::move(ready)] { return ready() ? 1.0 : 0.0; });

  WorkerMetrics out;
  out.throughput = std::make_shared<ThroughputMeter>(10.0);
  m.gauge_fn("switchyard_worker_generation_tokens_per_second", "Tokens generated per second over the last 10 s.",
             [meter = out.throughput, &st] { return sample_throughput(*meter, st).generated_per_s; });
  m.gauge_fn("switchyard_worker_prompt_tokens_per_second",
             "Prompt tokens computed per second (cached ones not) over the last 10 s.",
             [meter = out.throughput, &st] { return sample_throughput(*meter, st).prompt_per_s; });
  const char* routes[kNumWorkerRoutes] = {"/v1/completions", "/v1/chat/completions",
                                          "/internal/generate", "/internal/kv-events"};
  for (int i = 0; i < kNumWorkerRoutes; ++i)
    out.requests_total[i] = &m.counter("switchyard_worker_http_requests_total",
                                       "HTTP requests received by route.", {{"route", routes[i]}});
  out.ttft = &m.histogram("switchyard_worker_time_to_first_token_seconds",
                          "Time from a request's arrival in the engine to its first token.",
                          latency_buckets_seconds());
  out.itl = &m.histogram("switchyard_worker_inter_token_latency_seconds",
                         "Time between two tokens of a request.", latency_buckets_seconds());
  out.e2e = &m.histogram("switchyard_worker_e2e_request_latency_seconds",
                         "Time from a generation request's arrival to its last byte queued.",
                         latency_buckets_seconds());
  return out;
}

}  // namespace sy
