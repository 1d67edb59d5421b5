// The simulated worker's engine: no model, only the timing and the bookkeeping of one.
// It admits up to max_num_seqs requests (the rest wait, most urgent class first, then
// by arrival), reserves KV blocks for each in a real prefix cache (common/kv_cache: the
// worker's own block manager, whose stored and removed hashes go out on
// /internal/kv-events), and hands admitted requests back to their streams with the
// number of prompt tokens the cache held.
//
// Thread-safe: every method may be called from any connection's strand; one mutex
// guards the cache and the queues (the cache manager is owned by whoever holds it).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/simworker/shared_timeline.h"
#include "common/kv_cache/kv_cache_manager.h"
#include "common/kv_cache/kv_events.h"
#include "common/worker_metrics.h"

namespace sy::sim {

class SimRequest;

struct SimEngineOptions {
  int32_t max_num_seqs = 16;
  int32_t block_size = 16;
  int32_t kv_blocks = 8192;
  int32_t kv_host_blocks = 0;  // the KV host tier (KvCacheManager's num_host_blocks); 0: none
  bool prefix_caching = true;
  uint64_t model_fingerprint = 0;  // h_{-1} of the block hashes
  // "": serial prefill queues in this process only; else the file of a prefill queue
  // shared with every simulated worker given the same path (one simulated GPU).
  std::string shared_prefill_path;
  // With shared_prefill_path: each process's prefills in turn, the GPU time-sliced
  // between the processes with prefill pending (SharedTimeline::Sharing::kSliced).
  bool sliced_prefill = false;
  // With sliced_prefill: decode time-sliced too, each decode step as many times as long
  // as there are processes with a request decoding on the shared GPU (on the H200 four
  // replicas' decode steps took 4.9-6.1 times as long as one's alone, docs/PERFORMANCE.md).
  bool sliced_decode = false;
};

class SimEngine {
 public:
  explicit SimEngine(SimEngineOptions options);

  const SimEngineOptions& options() const { return options_; }
  KvEventHub& kv_events() { return hub_; }
  WorkerStats& stats() { return stats_; }

  // Queues `r` and admits what fits; false (and nothing queued) when a live request
  // has its id already.
  bool submit(const std::shared_ptr<SimRequest>& r);
  // `tokens` (prompt, resume ids, generated ones) have been computed: their full blocks
  // join the prefix cache.
  void computed(SimRequest& r, std::span<const int32_t> tokens);
  // `r` ended (finished, or cancelled when `aborted`): its blocks become cached or free,
  // and waiting requests take its place. Safe to call more than once.
  void finished(SimRequest& r, bool aborted);
  // Shutdown: every live request ends with an `aborted` error event.
  void abort_all();

  // A seed for a request that brought none, and a seed for its timing jitter.
  uint64_t draw_seed();

  // Serial prefill: `ms` of prefill work queued behind what earlier requests queued (on
  // the shared queue where options().shared_prefill_path names one); says in how many
  // milliseconds from now it is done, if nothing more is queued meanwhile.
  SharedTimeline::Queued queue_prefill(double ms);
  // When that time comes: 0 if the work is done, else the milliseconds it still needs
  // (a time-sliced GPU, options().sliced_prefill, slowed by work other replicas queued).
  double prefill_left_ms(const SharedTimeline::Queued& q);
  // A request began (+1) or ended (-1) its decoding (the shared GPU hears of it).
  void decoding(int32_t delta);
  // The factor of its decode steps' time: with options().sliced_decode the processes
  // decoding on the shared GPU now (at least 1), else 1.
  double decode_slowdown();

 private:
  // Per request, guarded by mu_.
  struct Slot {
    std::shared_ptr<SimRequest> request;
    uint64_t arrival = 0;
    bool running = false;
    std::vector<int32_t> blocks;
    std::vector<uint64_t> hashes;  // of full blocks, as far as computed
    int32_t registered = 0;        // leading blocks registered in the cache
  };
  bool try_admit(Slot& s);
  void admit_waiting();
  void release(Slot& s);
  void update_gauges();

  const SimEngineOptions options_;
  WorkerStats stats_;
  KvEventHub hub_;
  std::mutex mu_;
  KvCacheManager kv_;
  std::unordered_map<std::string, Slot> live_;  // by request id
  std::vector<Slot*> waiting_;
  int32_t running_ = 0;
  int32_t decoding_ = 0;  // requests between their first token and their end
  uint64_t next_arrival_ = 0;
  std::chrono::steady_clock::time_point prefill_free_at_{};  // when the queued prefill work ends
  std::unique_ptr<SharedTimeline> shared_prefill_;           // set: the queue is shared
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace sy::sim
