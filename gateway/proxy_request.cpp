#include "gateway/proxy_request.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <limits>

#include "common/constrain/tool_constraint.h"
#include "policy/block_hash.h"

namespace sy::gateway {

ProxyRequest::ProxyRequest(std::shared_ptr<ProxyContext> ctx, RequestIo io, OpenAiRequest request, std::vector<int32_t> prompt_ids,
                           ResponseHeader header, int32_t priority, std::string api_key, uint64_t id)
    : ctx_(std::move(ctx)),
      io_(std::move(io)),
      client_(*io_.client),
      request_(std::move(request)),
      prompt_ids_(std::move(prompt_ids)),
      hashes_(policy::prefix_block_hashes(ctx_->fingerprint, prompt_ids_, ctx_->block_size)),
      header_(std::move(header)),
      priority_(priority),
      api_key_(std::move(api_key)),
      id_(id),
      arrived_at_(now()) {
  // A continuation elsewhere must draw the same random numbers: fix the seed now.
  if (!request_.sampling.greedy() && !request_.sampling.seed) request_.sampling.seed = ctx_->draw_seed();
}

uint64_t ProxyRequest::prompt_key() const {
  return policy::chain_block_hash(ctx_->fingerprint, prompt_ids_);
}

uint64_t ProxyRequest::session_key() const {
  if (request_.user.empty()) return 0;
  const uint64_t h = std::hash<std::string>{}(request_.user);
  return h == 0 ? 1 : h;
}

template <typename F>
void ProxyRequest::tell_core(F&& f) {
  boost::asio::post(ctx_->core->executor(), [core = ctx_->core, f = std::forward<F>(f)]() mutable { f(*core); });
}

void ProxyRequest::start() {
  auto self = shared_from_this();
  client_.on_cancel([self] { self->client_gone(); });
  ++ctx_->open_requests;
  tell_core([self](GatewayCore& core) { core.submit(self); });
}

// Messages from the core.

void ProxyRequest::reject(const ApiError& error, int retry_after_s) {
  boost::asio::post(client_.executor(), [self = shared_from_this(), error, retry_after_s] {
    self->mark_finished();
    if (retry_after_s > 0) self->client_.add_header("Retry-After", std::to_string(retry_after_s));
    self->client_.fail(error);
  });
}

void ProxyRequest::dispatch(ReplicaSlot slot, const ReplicaInfo& info, const AttemptTimeouts& timeouts, bool hedge) {
  auto a = std::make_shared<Attempt>();
  a->replica = slot.replica();
  a->slot = std::move(slot);
  a->info = info;
  a->hedge = hedge;
  boost::asio::post(client_.executor(), [self = shared_from_this(), a, timeouts] { self->on_dispatched(a, timeouts); });
}

void ProxyRequest::defer_hedge(double waited_s) {
  boost::asio::post(client_.executor(), [self = shared_from_this(), waited_s] {
    if (self->finished_ || self->first_token_ || self->live_.size() != 1) return;
    self->hedge_at_ = self->live_.front()->sent_at + waited_s;
    self->hedge_asked_ = false;
    self->rearm_watchdog();
  });
}

void ProxyRequest::retry_refused() {
  boost::asio::post(client_.executor(), [self = shared_from_this()] {
    if (self->finished_) return;
    self->end(false, false);
    self->client_.fail(self->failure_.value_or(ApiError::internal("the request failed")));
  });
}

void ProxyRequest::withdrawn() {
  boost::asio::post(client_.executor(), [self = shared_from_this()] { self->mark_finished(); });
}

void ProxyRequest::on_dispatched(const AttemptPtr& a, const AttemptTimeouts& timeouts) {
  if (finished_ || client_.cancelled() || (a->hedge && first_token_)) {
    // Over meanwhile, or the hedge came too late: a's slot goes back unused as a drops.
    if (!finished_ && client_.cancelled() && live_.empty()) end(false, true);
    return;
  }
  a->number = ++attempts_;
  a->sent_at = now();
  timeouts_ = timeouts;
  if (!a->hedge) hedge_at_ = a->sent_at + timeouts.hedge_delay;
  live_.push_back(a);
  start_attempt(a);
  rearm_watchdog();
}

// The attempts.

void ProxyRequest::start_attempt(const AttemptPtr& a) {
  InternalGenerateRequest g;
  g.request_id = "gw-" + header_.id + "-" + std::to_string(a->number);  // an earlier attempt may still live
  g.prompt_ids = prompt_ids_;
  g.resume_ids = generated_;
  g.sampling = request_.sampling;
  g.priority = priority_;
  constrain::tool_constraint_spec(request_, header_.output, g.constraint);  // checked by the gateway already
  UpstreamRequest req;
  req.host = a->info.host;
  req.port = a->info.port;
  req.method = "POST";
  req.target = "/internal/generate";
  req.body = internal_generate_body(g);
  req.idle_timeout = ctx_->upstream_idle_timeout;
  UpstreamHandlers h;
  auto self = shared_from_this();
  h.on_headers = [a](int status, std::string_view) { a->status = status; };
  h.on_data = [self, a](std::string_view d) { self->on_data(a, d); };
  h.on_done = [self, a](boost::beast::error_code, std::string what) { self->on_done(a, what); };
  a->call = io_.connect(std::move(req), std::move(h));
}

bool ProxyRequest::live(const AttemptPtr& a) const {
  return !finished_ && std::find(live_.begin(), live_.end(), a) != live_.end();
}

void ProxyRequest::on_data(const AttemptPtr& a, std::string_view data) {
  if (!live(a)) return;
  if (a->status != 200) {
    if (a->error_body.size() < 64 * 1024) a->error_body.append(data);
    return;
  }
  std::vector<http::SseEvent> events;
  const bool ok = a->parser.feed(data, events);
  for (const auto& e : events) {
    handle_event(a, e);
    if (!live(a)) return;  // ended, or this attempt failed or lost
  }
  if (!ok) attempt_failed(a, ApiError::internal("the worker's stream was malformed"));
}

void ProxyRequest::handle_event(const AttemptPtr& a, const http::SseEvent& e) {
  if (e.type == "tokens") {
    InternalTokens t;
    if (parse_internal_tokens(e.data, t)) return;
    if (t.index != static_cast<int32_t>(generated_.size()))  // a gap or a repeat: not the stream we asked for
      return attempt_failed(a, ApiError::internal("the worker's token stream was out of order"));
    on_tokens(a, t);
  } else if (e.type == "finish") {
    InternalFinish f;
    if (parse_internal_finish(e.data, f)) return attempt_failed(a, ApiError::internal("the worker's finish event was malformed"));
    tell_core([u = f.usage](GatewayCore& core) { core.count_usage(u); });
    if (!first_token_) name_replica(a);
    client_.finish(f.finish_reason, f.text, f.usage);
    end(true, false, &f.usage);
  } else if (e.type == "error") {  // the worker aborted (shutdown) or failed: try elsewhere
    attempt_failed(a, ApiError::unavailable("the worker failed the request: " + e.data, "upstream_error"));
  } else if (e.type == "preempted") {  // alive, and silent while it recomputes (silence_limit)
    InternalPreempted p;
    if (parse_internal_preempted(e.data, p)) return;
    a->preempted_at = now();
    tell_core([](GatewayCore& core) { core.preempted(); });
    rearm_watchdog();
  }
}

void ProxyRequest::on_tokens(const AttemptPtr& a, const InternalTokens& t) {
  const double at = now();
  const auto n = static_cast<int64_t>(t.ids.size());
  // The gap since a preemption is a recomputation, not an inter-token gap.
  const bool resumed = a->preempted_at >= 0;
  a->preempted_at = -1;
  if (!a->first_token) {
    a->first_token = true;
    tell_core([i = a->replica, uncached = a->slot.uncached_tokens(), ahead = a->slot.work_ahead_tokens(),
               on_worker = at - a->sent_at](GatewayCore& core) {
      core.fleet().first_token(i, uncached, on_worker, ahead);
      core.observe_attempt_ttft(on_worker);
    });
  }
  if (!first_token_) {
    on_first_token(a, at);
    tell_core([ttft = at - arrived_at_, n](GatewayCore& core) {
      core.observe_ttft(ttft);
      core.count_output(n);
    });
  } else if (n > 0) {
    tell_core([gap = (at - last_token_at_) / static_cast<double>(n), n, resumed](GatewayCore& core) {
      if (!resumed) core.observe_itl(gap);
      core.count_output(n);
    });
  }
  last_token_at_ = at;
  std::vector<http::ResponderToken> out(t.ids.size());
  for (size_t k = 0; k < t.ids.size(); ++k) {
    out[k].id = t.ids[k];
    if (k < t.logprobs.size()) {
      out[k].logprob = t.logprobs[k].logprob;
      out[k].top_logprobs = t.logprobs[k].top;
    }
  }
  if (!out.empty()) out.back().text = t.text;  // the text the ids complete, together
  generated_.insert(generated_.end(), t.ids.begin(), t.ids.end());
  client_.tokens(out);
  rearm_watchdog();
}

void ProxyRequest::on_first_token(const AttemptPtr& a, double at) {
  // This attempt wins the race: the others are cancelled on their workers.
  first_token_ = true;
  for (const AttemptPtr& other : std::vector<AttemptPtr>(live_)) {
    if (other == a) continue;
    // A worker answers the headers as soon as it reads a request; a loser silent for a
    // whole hedge delay never got it (a dead link, a stopped process). Outlier
    // detection must count that, or the replica keeps drawing requests that only
    // hedges rescue, until the budget runs dry and they fail.
    const bool unreachable = other->status == 0 && at - other->sent_at >= timeouts_.hedge_delay;
    close_attempt(other);
    if (unreachable) tell_core([i = other->replica](GatewayCore& core) { core.fleet().attempt_failed(i); });
  }
  if (a->hedge) tell_core([](GatewayCore& core) { core.hedge_won(); });
  name_replica(a);
}

void ProxyRequest::name_replica(const AttemptPtr& a) {
  client_.add_header("x-switchyard-replica", a->info.id);
  client_.add_header("x-switchyard-attempts", std::to_string(attempts_));
}

void ProxyRequest::on_done(const AttemptPtr& a, const std::string& what) {
  if (!live(a)) return;
  if (a->status >= 400 && a->status < 500 && !client_.begun()) {
    // The worker refused the request itself: pass its answer on (another would too).
    name_replica(a);
    client_.respond_json(a->status, a->error_body);
    return end(false, false);
  }
  const std::string why = a->status >= 500 ? "answered " + std::to_string(a->status) : what;
  attempt_failed(a, ApiError::unavailable("the worker connection ended before the response was complete (" + why + ")", "upstream_error"));
}

ReplicaSlot ProxyRequest::close_attempt(const AttemptPtr& a, SlotUse use, bool keep_slot) {
  auto it = std::find(live_.begin(), live_.end(), a);
  if (it == live_.end()) return {};
  live_.erase(it);
  if (a->call) a->call->cancel();  // the worker sees its client go and frees the request
  a->call.reset();
  if (keep_slot) return std::move(a->slot);
  use.first_token = a->first_token;
  a->slot.release(use);
  return {};
}

void ProxyRequest::attempt_failed(const AttemptPtr& a, const ApiError& why) {
  if (!live(a)) return;
  if (client_.cancelled()) return end(false, true);
  if (live_.size() > 1) {  // a racing sibling carries on
    close_attempt(a);
    tell_core([i = a->replica](GatewayCore& core) { core.fleet().attempt_failed(i); });
    return rearm_watchdog();
  }
  // The slot goes back in the core's retry decision, which counts the replica's requests
  // with this one still among them (the size of its failure event).
  FailedAttempt f{std::hash<std::string>{}(a->info.boot_id), a->first_token, close_attempt(a, {}, /*keep_slot=*/true)};
  io_.watchdog->cancel();
  failure_ = why;
  tell_core([self = shared_from_this(), f = std::move(f), n = attempts_](GatewayCore& core) mutable { core.retry(self, std::move(f), n); });
}

// The watchdog.

void ProxyRequest::rearm_watchdog() {
  if (finished_ || live_.empty()) return io_.watchdog->cancel();
  double due = std::numeric_limits<double>::infinity();
  for (const AttemptPtr& a : live_) due = std::min(due, silence_limit(a));
  if (!first_token_ && !hedge_asked_ && live_.size() == 1 && timeouts_.hedge_delay > 0)
    due = std::min(due, hedge_at_);
  io_.watchdog->set(due, [self = shared_from_this()] { self->on_watchdog(); });
}

double ProxyRequest::silence_limit(const AttemptPtr& a) const {
  // Until its first token an attempt may prefill (prompt and resumed ids); after it, the
  // stall limit runs from the latest token. A preempted one prefills its context again:
  // from its worker's notice, as long as a first token may take. (A worker under KV
  // pressure preempts a stream and recomputes its whole context, tens of thousands of
  // tokens in an agent's late turns: seconds of silence, which the stall limit, a few
  // times the p99 gap, would fail over to a replica that must recompute it too.)
  if (a->preempted_at >= 0) return a->preempted_at + timeouts_.first_token;
  return a->first_token ? last_token_at_ + timeouts_.stall : a->sent_at + timeouts_.first_token;
}

void ProxyRequest::on_watchdog() {
  if (finished_ || live_.empty()) return;
  const double at = now();
  for (const AttemptPtr& a : std::vector<AttemptPtr>(live_)) {
    if (at < silence_limit(a)) continue;
    tell_core([](GatewayCore& core) { core.stalled(); });
    attempt_failed(a, a->first_token ? ApiError::unavailable("the worker stalled mid-stream", "upstream_stalled")
                                     : ApiError::unavailable("the worker sent no first token in time", "upstream_stalled"));
    if (finished_ || live_.empty()) return;
  }
  if (!first_token_ && !hedge_asked_ && live_.size() == 1 && timeouts_.hedge_delay > 0 && at >= hedge_at_) {
    hedge_asked_ = true;
    tell_core([self = shared_from_this(), i = live_.front()->replica, n = attempts_, waited = at - live_.front()->sent_at](GatewayCore& core) {
      core.hedge(self, i, n, waited);
    });
  }
  rearm_watchdog();
}

// Endings.

void ProxyRequest::client_gone() {
  if (finished_) return;
  // Queued (or between attempts): leave the queue. If the core already dispatched it,
  // on_dispatched() sees the cancelled client and ends it.
  if (live_.empty()) return tell_core([self = shared_from_this()](GatewayCore& core) { core.withdraw(self); });
  end(false, true);
}

void ProxyRequest::end(bool ok, bool cancelled, const Usage* usage) {
  if (finished_) return;
  for (const AttemptPtr& a : std::vector<AttemptPtr>(live_))
    close_attempt(a, {.succeeded = ok, .prompt_tokens = usage ? usage->prompt_tokens : 0, .cached_tokens = usage ? usage->cached_tokens : 0});
  mark_finished();
  io_.watchdog->cancel();
  tell_core([ok, cancelled](GatewayCore& core) { core.request_done(ok, cancelled); });
}

void ProxyRequest::mark_finished() {
  if (finished_) return;
  finished_ = true;
  --ctx_->open_requests;
}

}  // namespace sy::gateway
