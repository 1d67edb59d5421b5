// The gateway's view of its replicas for routing: which are ready, how loaded, how
// fast they prefill, and what each holds in its prefix cache (kept exact by following
// each worker's /internal/kv-events stream, approximate from the gateway's own
// decisions while that stream is down). Lives on the gateway's core strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/http/sse_parser.h"
#include "gateway/supervisor.h"
#include "gateway/upstream_call.h"
#include "gateway/worker_scrape.h"
#include "policy/clock.h"
#include "policy/prefix_index.h"
#include "policy/router.h"
#include "policy/ttft_fit.h"

namespace sy::gateway {

struct ReplicaLoad {
  int32_t in_flight = 0;
  int64_t pending_prefill_tokens = 0;
  // Its time to first token, latency + work × per token, fitted from its first tokens;
  // until one arrives, 1 ms a token and no latency.
  policy::TtftFit ttft_fit;
  double prefill_s_per_token = 1e-3;
  double first_token_latency_s = 0;
  int64_t cost_samples = 0;  // first tokens that measured it (0: the defaults above)
  bool events_connected = false;
  uint64_t events_seq = 0;
  int64_t requests_total = 0;
  int64_t prompt_tokens_total = 0;
  int64_t cached_tokens_total = 0;
  // From the worker's /metrics, polled.
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_host_blocks_total = 0;
  int64_t worker_running = 0;
  int64_t worker_waiting = 0;
  std::vector<std::string> gpu_uuids;  // the GPUs it reports (none from a CPU worker)
  // Outlier detection: failed attempts in a row eject the replica for a while.
  int32_t consecutive_failures = 0;
  double ejected_until_s = 0;  // on the fleet's clock
  int64_t ejections_total = 0;
  // Replica slots given back (each dispatch takes one; ReplicaSlot gives it back once).
  int64_t slots_released = 0;
  bool ejected(double now_s) const { return now_s < ejected_until_s; }
};

class Fleet : public std::enable_shared_from_this<Fleet> {
 public:
  // `clock`: ejections are timed on it.
  Fleet(boost::asio::any_io_executor core, size_t approx_capacity, std::shared_ptr<const policy::Clock> clock);

  // Follows the supervisor: a replica that turns ready gets its event stream; one that
  // leaves ready loses it and everything the indices knew about it.
  void on_replica_change(const ReplicaInfo& r);
  void reset(size_t replicas);  // a new fleet shape
  uint64_t generation() const { return generation_; }  // bumps with every reset()

  // Router input for a prompt with these block hashes; `with_room` limits availability
  // to replicas whose in-flight count is below their capacity. A replica's pending
  // prefill counts that of the replicas sharing a GPU with it (a GPU uuid both report, or
  // the same host and a common device id), whose prefills queue on it too.
  std::vector<policy::ReplicaState> states(std::span<const uint64_t> prefix_hashes, bool with_room) const;
  // Usable for new work: ready and not ejected.
  bool usable(size_t i) const;
  // The median fitted prefill cost per token of the usable replicas that have measured
  // one (seconds); 0 when none has.
  double median_prefill_s_per_token() const;
  bool any_with_room() const;
  bool any_alive() const;  // ready, starting or restarting: worth queueing for
  bool ejected(size_t i) const { return loads_[i].ejected(clock_->now_s()); }
  // When the earliest ejection of a ready replica ends, on the clock (queued work can go
  // then).
  std::optional<double> next_ejection_end() const;

  // Bookkeeping around one request on replica i.
  void dispatched(size_t i, std::span<const uint64_t> prefix_hashes, int64_t uncached_tokens);
  // `work_ahead_tokens`: the pending prefill tokens the router saw for the replica when
  // the request was sent (on its devices: see states()); the prefill cost per token is
  // measured over them and the request's own.
  void first_token(size_t i, int64_t uncached_tokens, double ttft_s, int64_t work_ahead_tokens = 0);
  // Gives a dispatch's slot back: only GatewayCore::give_back, for a ReplicaSlot.
  void finished(size_t i, bool got_first_token, int64_t uncached_tokens, int32_t prompt_tokens, int32_t cached_tokens);
  // An attempt on replica i failed (reset, refused, stalled, aborted) or succeeded.
  void attempt_failed(size_t i);
  void attempt_succeeded(size_t i);

  void set_worker_stats(size_t i, const std::string& boot_id, const WorkerScrape& w);
  // The uuids of the GPUs replica i's worker (boot `boot_id`) reports: replicas reporting
  // a common one share it, whatever their hosts and device ids say.
  void set_worker_gpus(size_t i, const std::string& boot_id, std::vector<std::string> gpu_uuids);

  const ReplicaInfo& info(size_t i) const { return infos_[i]; }
  const ReplicaLoad& load(size_t i) const { return loads_[i]; }
  size_t size() const { return infos_.size(); }
  int32_t matched_blocks(size_t i, std::span<const uint64_t> prefix_hashes) const;
  // The most leading blocks of this prompt any ready replica holds, from the exact index
  // where its events stream, else the approximate one: the oracle's cache hit (what a
  // router that knew every cache could have reused), whatever the policy chose.
  int32_t best_matched_blocks(std::span<const uint64_t> prefix_hashes) const;
  // Routing policy "approximate": matched_blocks() from the approximate index even where
  // KV events stream (they still feed the exact index, for best_matched_blocks).
  void set_approximate_only(bool on) { approximate_only_ = on; }

 private:
  void connect_events(size_t i);
  void on_events_data(size_t i, uint64_t generation, std::string_view data);
  void on_events_done(size_t i, uint64_t generation);

  boost::asio::any_io_executor core_;
  std::shared_ptr<const policy::Clock> clock_;
  std::vector<ReplicaInfo> infos_;
  std::vector<ReplicaLoad> loads_;
  struct Stream {
    std::shared_ptr<UpstreamCall> call;
    http::SseParser parser;
    uint64_t generation = 0;  // bumps on every (re)connect; stale callbacks are ignored
    std::unique_ptr<boost::asio::steady_timer> retry;
  };
  std::vector<std::unique_ptr<Stream>> streams_;
  uint64_t generation_ = 0;
  policy::ExactPrefixIndex exact_;
  policy::ApproxPrefixIndex approx_;
  bool approximate_only_ = false;
};

}  // namespace sy::gateway
