#include "gateway/fleet.h"

#include <algorithm>

#include "common/protocol/internal_api.h"

namespace sy::gateway {

namespace {
constexpr auto kEventsRetry = std::chrono::milliseconds(500);

bool common_element(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  return false;
}

// Two replicas share a GPU when their workers report a common one (by uuid), or when
// they run on one host and their config names a common GPU (several replicas per device,
// replicas.yaml; this holds before any report): their prefills take turns on it. CPU
// replicas each run on their own share of the cores.
bool share_device(const ReplicaInfo& a, const ReplicaLoad& la, const ReplicaInfo& b, const ReplicaLoad& lb) {
  const bool cpu = a.devices == std::vector<std::string>{"cpu"};
  return common_element(la.gpu_uuids, lb.gpu_uuids) || (a.host == b.host && !cpu && common_element(a.devices, b.devices));
}
}  // namespace

Fleet::Fleet(boost::asio::any_io_executor core, size_t approx_capacity, std::shared_ptr<const policy::Clock> clock)
    : core_(std::move(core)), clock_(std::move(clock)), approx_(approx_capacity) {}

void Fleet::reset(size_t replicas) {
  for (auto& s : streams_)
    if (s && s->call) s->call->cancel();
  ++generation_;
  infos_.assign(replicas, {});
  loads_.assign(replicas, {});
  streams_.clear();
  for (size_t i = 0; i < replicas; ++i) {
    streams_.push_back(std::make_unique<Stream>());
    streams_.back()->retry = std::make_unique<boost::asio::steady_timer>(core_);
    exact_.forget(static_cast<int>(i));
    approx_.forget(static_cast<int>(i));
  }
}

void Fleet::on_replica_change(const ReplicaInfo& r) {
  const auto i = static_cast<size_t>(r.index);
  if (i >= infos_.size()) return;
  const bool was_ready = infos_[i].phase == ReplicaPhase::kReady;
  const bool restarted = infos_[i].boot_id != r.boot_id;
  infos_[i] = r;
  if (restarted) {
    loads_[i].consecutive_failures = 0;
    loads_[i].ejected_until_s = 0;
    loads_[i].gpu_uuids.clear();  // until the new process reports its own
  }
  if (r.phase == ReplicaPhase::kReady && (!was_ready || restarted)) {
    exact_.forget(r.index);
    approx_.forget(r.index);
    connect_events(i);
  } else if (r.phase != ReplicaPhase::kReady && r.phase != ReplicaPhase::kDraining) {
    Stream& s = *streams_[i];
    ++s.generation;
    if (s.call) s.call->cancel();
    s.call.reset();
    loads_[i].events_connected = false;
    exact_.forget(r.index);
    approx_.forget(r.index);
  }
}

void Fleet::connect_events(size_t i) {
  Stream& s = *streams_[i];
  const uint64_t gen = ++s.generation;
  if (s.call) s.call->cancel();
  s.parser = http::SseParser();
  const ReplicaInfo& r = infos_[i];
  UpstreamRequest req;
  req.host = r.host;
  req.port = r.port;
  req.target = "/internal/kv-events";
  req.idle_timeout = std::chrono::hours(24 * 365);  // events come when caches change
  UpstreamHandlers h;
  auto self = shared_from_this();
  h.on_data = [self, i, gen](std::string_view d) { self->on_events_data(i, gen, d); };
  h.on_done = [self, i, gen](boost::beast::error_code, std::string) { self->on_events_done(i, gen); };
  s.call = UpstreamCall::start(core_, req, std::move(h));
}

void Fleet::on_events_data(size_t i, uint64_t generation, std::string_view data) {
  Stream& s = *streams_[i];
  if (generation != s.generation) return;
  std::vector<http::SseEvent> events;
  if (!s.parser.feed(data, events)) {
    if (s.call) s.call->cancel();
    return;
  }
  for (const auto& e : events) {
    KvEventWire w;
    if (parse_kv_event(e.data, w)) continue;  // an error: skip the event
    const int replica = static_cast<int>(i);
    if (!loads_[i].events_connected) {  // the first event is the snapshot
      exact_.reset(replica, w.hashes);
      loads_[i].events_connected = true;
    } else if (w.stored) {
      exact_.stored(replica, w.hashes);
    } else {
      exact_.removed(replica, w.hashes);
    }
    loads_[i].events_seq = w.seq;
  }
}

void Fleet::on_events_done(size_t i, uint64_t generation) {
  Stream& s = *streams_[i];
  if (generation != s.generation) return;
  loads_[i].events_connected = false;  // the approximate index takes over
  s.call.reset();
  if (infos_[i].phase != ReplicaPhase::kReady) return;
  s.retry->expires_after(kEventsRetry);
  s.retry->async_wait([self = shared_from_this(), i, generation](boost::system::error_code ec) {
    if (ec || i >= self->streams_.size() || self->streams_[i]->generation != generation) return;
    if (self->infos_[i].phase == ReplicaPhase::kReady) self->connect_events(i);
  });
}

int32_t Fleet::matched_blocks(size_t i, std::span<const uint64_t> prefix_hashes) const {
  const int replica = static_cast<int>(i);
  return loads_[i].events_connected && !approximate_only_ ? exact_.matched_blocks(replica, prefix_hashes)
                                                         : approx_.matched_blocks(replica, prefix_hashes);
}

int32_t Fleet::best_matched_blocks(std::span<const uint64_t> prefix_hashes) const {
  int32_t best = 0;
  for (size_t i = 0; i < infos_.size(); ++i) {
    if (infos_[i].phase != ReplicaPhase::kReady) continue;
    const int replica = static_cast<int>(i);
    best = std::max(best, loads_[i].events_connected ? exact_.matched_blocks(replica, prefix_hashes)
                                                     : approx_.matched_blocks(replica, prefix_hashes));
  }
  return best;
}

std::vector<policy::ReplicaState> Fleet::states(std::span<const uint64_t> prefix_hashes, bool with_room) const {
  std::vector<policy::ReplicaState> out(infos_.size());
  // A replica that has not measured its prefill cost yet is taken to cost the mean of
  // those that have: with the fixed default instead, a router comparing costs starved it
  // (measured: with llama3-8b on an H200 the default was ten times the measured cost, and
  // one of four replicas never got a session, so it never measured one either).
  auto has_fit = [&](size_t i) { return loads_[i].cost_samples > 0 && usable(i); };
  double measured_sum = 0, latency_sum = 0;
  int measured = 0;
  for (size_t i = 0; i < infos_.size(); ++i)
    if (has_fit(i)) {
      measured_sum += loads_[i].prefill_s_per_token;
      latency_sum += loads_[i].first_token_latency_s;
      ++measured;
    }
  for (size_t i = 0; i < infos_.size(); ++i) {
    const ReplicaInfo& r = infos_[i];
    const ReplicaLoad& l = loads_[i];
    policy::ReplicaState& s = out[i];
    s.id_hash = std::hash<std::string>{}(r.id);
    s.available = usable(i) && (!with_room || l.in_flight < r.max_num_seqs);
    s.in_flight = l.in_flight;
    s.capacity = r.max_num_seqs;
    // The prefill a first token there waits for is all that is queued on its GPU, its
    // own and that of the replicas sharing it: its own queue alone under-predicts its
    // wait, and its fitted cost (measured over this work ahead) reads the others'
    // prefills as its own slowness. Its cost per token is its GPU's too, the mean fit of
    // the measured replicas sharing it: each fits the same queue on the same device, so
    // their differences are noise (four identical replicas on one H200 fitted 1.3-4.0
    // times apart), and new sessions' homes are weighed by these costs (in the simulator,
    // one cost per GPU kept busiest/least in flight ≤ 1.5 on 8 of 8 seeds, against 3).
    s.pending_prefill_tokens = 0;
    double gpu_sum = 0;
    int gpu_measured = 0;
    for (size_t j = 0; j < infos_.size(); ++j) {
      if (j != i && !share_device(r, l, infos_[j], loads_[j])) continue;
      s.pending_prefill_tokens += loads_[j].pending_prefill_tokens;
      if (has_fit(j)) gpu_sum += loads_[j].prefill_s_per_token, ++gpu_measured;
    }
    const bool mean = l.cost_samples == 0 && measured > 0;
    s.prefill_s_per_token = gpu_measured > 0 ? gpu_sum / gpu_measured : mean ? measured_sum / measured : l.prefill_s_per_token;
    s.first_token_latency_s = mean ? latency_sum / measured : l.first_token_latency_s;
    s.matched_blocks = s.available ? matched_blocks(i, prefix_hashes) : 0;
  }
  return out;
}

double Fleet::median_prefill_s_per_token() const {
  std::vector<double> costs;
  for (size_t i = 0; i < infos_.size(); ++i)
    if (loads_[i].cost_samples > 0 && usable(i)) costs.push_back(loads_[i].prefill_s_per_token);
  return policy::median(std::move(costs));
}

bool Fleet::usable(size_t i) const { return infos_[i].phase == ReplicaPhase::kReady && !ejected(i); }

bool Fleet::any_with_room() const {
  for (size_t i = 0; i < infos_.size(); ++i)
    if (usable(i) && loads_[i].in_flight < infos_[i].max_num_seqs) return true;
  return false;
}

bool Fleet::any_alive() const {
  for (const auto& r : infos_)
    if (r.phase == ReplicaPhase::kReady || r.phase == ReplicaPhase::kStarting || r.phase == ReplicaPhase::kDraining) return true;
  return false;
}

std::optional<double> Fleet::next_ejection_end() const {
  std::optional<double> t;
  for (size_t i = 0; i < loads_.size(); ++i)
    if (infos_[i].phase == ReplicaPhase::kReady && ejected(i) && (!t || loads_[i].ejected_until_s < *t)) t = loads_[i].ejected_until_s;
  return t;
}

void Fleet::attempt_failed(size_t i) {
  if (i >= loads_.size()) return;
  ReplicaLoad& l = loads_[i];
  ++l.consecutive_failures;
  // Eject at once (a dead or unreachable worker fails every request sent to it) for
  // 1 s, doubling with each further failure up to 30 s; a new boot clears it.
  const double span_s = std::min(30.0, static_cast<double>(int64_t{1} << std::min(l.consecutive_failures - 1, 5)));
  l.ejected_until_s = clock_->now_s() + span_s;
  ++l.ejections_total;
}

void Fleet::attempt_succeeded(size_t i) {
  if (i < loads_.size()) loads_[i].consecutive_failures = 0;
}

void Fleet::dispatched(size_t i, std::span<const uint64_t> prefix_hashes, int64_t uncached_tokens) {
  ReplicaLoad& l = loads_[i];
  ++l.in_flight;
  ++l.requests_total;
  l.pending_prefill_tokens += uncached_tokens;
  approx_.record(static_cast<int>(i), prefix_hashes);
}

void Fleet::first_token(size_t i, int64_t uncached_tokens, double ttft_s, int64_t work_ahead_tokens) {
  ReplicaLoad& l = loads_[i];
  l.pending_prefill_tokens = std::max<int64_t>(0, l.pending_prefill_tokens - uncached_tokens);
  // The first token waited for the prefill queued ahead of it too: dividing by its own
  // tokens alone would count the queue twice (the router adds the pending tokens).
  const int64_t work = uncached_tokens + std::max<int64_t>(0, work_ahead_tokens);
  if (uncached_tokens >= 16) {  // short prompts measure overheads more than prefill
    // The first sample replaces the default outright: the default is a guess, and a
    // replica still at it must not look slower (or faster) than measured ones for long.
    l.ttft_fit.add(static_cast<double>(work), ttft_s);
    l.prefill_s_per_token = l.ttft_fit.per_token_s();
    l.first_token_latency_s = l.ttft_fit.latency_s();
    ++l.cost_samples;
  }
}

void Fleet::finished(size_t i, bool got_first_token, int64_t uncached_tokens, int32_t prompt_tokens, int32_t cached_tokens) {
  if (i >= loads_.size()) return;
  ReplicaLoad& l = loads_[i];
  --l.in_flight;
  ++l.slots_released;
  if (!got_first_token) l.pending_prefill_tokens = std::max<int64_t>(0, l.pending_prefill_tokens - uncached_tokens);
  l.prompt_tokens_total += prompt_tokens;
  l.cached_tokens_total += cached_tokens;
}

void Fleet::set_worker_stats(size_t i, const std::string& boot_id, const WorkerScrape& w) {
  if (i >= infos_.size() || infos_[i].boot_id != boot_id) return;  // a stale answer
  ReplicaLoad& l = loads_[i];
  l.kv_blocks_used = w.kv_blocks_used;
  l.kv_blocks_total = w.kv_blocks_total;
  l.kv_host_blocks_total = w.kv_host_blocks_total;
  l.worker_running = w.requests_running;
  l.worker_waiting = w.requests_waiting;
}

void Fleet::set_worker_gpus(size_t i, const std::string& boot_id, std::vector<std::string> gpu_uuids) {
  if (i >= infos_.size() || infos_[i].boot_id != boot_id) return;  // a stale answer
  loads_[i].gpu_uuids = std::move(gpu_uuids);
}

}  // namespace sy::gateway
