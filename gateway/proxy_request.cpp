#include "gateway/proxy_request.h"

#include <boost/asio/post.hpp>
#include <random>

#include "policy/block_hash.h"

namespace sy::gateway {

namespace {

using SteadyClock = std::chrono::steady_clock;

SteadyClock::duration seconds(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

ProxyRequest::ProxyRequest(std::shared_ptr<ProxyContext> ctx, std::shared_ptr<http::Exchange> exchange, OpenAiRequest request,
                           std::vector<int32_t> prompt_ids, ResponseHeader header, int32_t priority, std::string api_key, uint64_t id)
    : ctx_(std::move(ctx)),
      ex_(std::move(exchange)),
      request_(std::move(request)),
      prompt_ids_(std::move(prompt_ids)),
      hashes_(policy::prefix_block_hashes(ctx_->fingerprint, prompt_ids_, ctx_->block_size)),
      header_(std::move(header)),
      priority_(priority),
      api_key_(std::move(api_key)),
      id_(id),
      responder_(ex_, header_, *ctx_->tokenizer, request_.stream, request_.include_usage, request_.sampling.logprobs >= 0),
      watchdog_(ex_->executor()) {
  // A continuation elsewhere must draw the same random numbers: fix the seed now.
  if (!request_.sampling.greedy() && !request_.sampling.seed) request_.sampling.seed = std::random_device{}() * 0x100000001ull + id_;
}

uint64_t ProxyRequest::prompt_key() const {
  return policy::chain_block_hash(ctx_->fingerprint, prompt_ids_);
}

void ProxyRequest::start() {
  auto self = shared_from_this();
  ex_->on_cancel([self] { self->client_gone(); });
  ++ctx_->open_requests;
  boost::asio::post(ctx_->core->executor(), [self] { self->ctx_->core->submit(self); });
}

void ProxyRequest::reject(const ApiError& error, int retry_after_s) {
  boost::asio::post(ex_->executor(), [self = shared_from_this(), error, retry_after_s] {
    self->mark_finished();
    if (retry_after_s > 0) self->ex_->add_header("Retry-After", std::to_string(retry_after_s));
    self->responder_.fail(error);
  });
}

void ProxyRequest::dispatch(size_t replica, const ReplicaInfo& info, int64_t uncached_tokens, const AttemptTimeouts& timeouts, bool hedge) {
  auto a = std::make_shared<Attempt>();
  a->replica = replica;
  a->info = info;
  a->uncached_tokens = uncached_tokens;
  a->hedge = hedge;
  boost::asio::post(ex_->executor(), [self = shared_from_this(), a, timeouts] {
    if (self->finished_ || self->ex_->cancelled() || (a->hedge && self->first_token_)) {
      // Over meanwhile, or the hedge came too late: give the slot back unused.
      boost::asio::post(self->ctx_->core->executor(), [core = self->ctx_->core, a] {
        core->fleet().finished(a->replica, false, a->uncached_tokens, 0, 0);
        core->dispatch();
      });
      if (!self->finished_ && self->ex_->cancelled() && self->live_.empty()) self->end(false, true);
      return;
    }
    a->number = ++self->attempts_;
    a->sent_at = SteadyClock::now();
    self->timeouts_ = timeouts;
    self->live_.push_back(a);
    self->start_attempt(a);
    self->rearm_watchdog();
  });
}

void ProxyRequest::start_attempt(const AttemptPtr& a) {
  InternalGenerateRequest g;
  g.request_id = "gw-" + header_.id + "-" + std::to_string(a->number);  // an earlier attempt may still live
  g.prompt_ids = prompt_ids_;
  g.resume_ids = generated_;
  g.sampling = request_.sampling;
  g.priority = priority_;
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
  h.on_done = [self, a](boost::beast::error_code ec, std::string what) { self->on_done(a, ec, what); };
  a->call = UpstreamCall::start(ex_->executor(), std::move(req), std::move(h));
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
    boost::asio::post(ctx_->core->executor(), [core = ctx_->core, u = f.usage] { core->count_usage(u); });
    if (!first_token_) ex_->add_header("x-switchyard-replica", a->info.id);
    responder_.finish(f.finish_reason, f.text, f.usage);
    end(true, false, &f.usage);
  } else if (e.type == "error") {  // the worker aborted (shutdown) or failed: try elsewhere
    attempt_failed(a, ApiError::unavailable("the worker failed the request: " + e.data, "upstream_error"));
  }
}

void ProxyRequest::on_tokens(const AttemptPtr& a, const InternalTokens& t) {
  const auto now = SteadyClock::now();
  GatewayCore& core = *ctx_->core;
  if (!a->first_token) {
    a->first_token = true;
    const double on_worker = std::chrono::duration<double>(now - a->sent_at).count();
    boost::asio::post(core.executor(), [c = ctx_->core, i = a->replica, n = a->uncached_tokens, on_worker] {
      c->fleet().first_token(i, n, on_worker);
      c->observe_attempt_ttft(on_worker);
    });
  }
  if (!first_token_) {
    // This attempt wins the race: the others are cancelled on their workers.
    first_token_ = true;
    for (const AttemptPtr& other : std::vector<AttemptPtr>(live_)) {
      if (other == a) continue;
      // A worker answers the headers as soon as it reads a request; a loser silent for a
      // whole hedge delay never got it (a dead link, a stopped process). Outlier
      // detection must count that, or the replica keeps drawing requests that only
      // hedges rescue, until the budget runs dry and they fail.
      const bool unreachable = other->status == 0 && now - other->sent_at >= seconds(timeouts_.hedge_delay);
      close_attempt(other, false);
      if (unreachable)
        boost::asio::post(core.executor(), [c = ctx_->core, i = other->replica] {
          c->fleet().attempt_failed(i);
          c->dispatch();
        });
    }
    if (a->hedge) boost::asio::post(core.executor(), [c = ctx_->core] { c->hedge_won(); });
    ex_->add_header("x-switchyard-replica", a->info.id);
    const double ttft = std::chrono::duration<double>(now - arrived_at_).count();
    boost::asio::post(core.executor(), [c = ctx_->core, ttft, n = static_cast<int64_t>(t.ids.size())] {
      c->observe_ttft(ttft);
      c->count_output(n);
    });
  } else if (!t.ids.empty()) {
    const double gap = std::chrono::duration<double>(now - last_token_at_).count() / static_cast<double>(t.ids.size());
    boost::asio::post(core.executor(), [c = ctx_->core, gap, n = static_cast<int64_t>(t.ids.size())] {
      c->observe_itl(gap);
      c->count_output(n);
    });
  }
  last_token_at_ = now;
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
  responder_.tokens(out);
  rearm_watchdog();
}

void ProxyRequest::on_done(const AttemptPtr& a, boost::beast::error_code, const std::string& what) {
  if (!live(a)) return;
  if (a->status >= 400 && a->status < 500 && !responder_.begun()) {
    // The worker refused the request itself: pass its answer on (another would too).
    ex_->add_header("x-switchyard-replica", a->info.id);
    ex_->respond_json(static_cast<http::Status>(a->status), a->error_body);
    return end(false, false);
  }
  const std::string why = a->status >= 500 ? "answered " + std::to_string(a->status) : what;
  attempt_failed(a, ApiError::unavailable("the worker connection ended before the response was complete (" + why + ")", "upstream_error"));
}

void ProxyRequest::close_attempt(const AttemptPtr& a, bool succeeded, const Usage* usage, bool keep_slot) {
  auto it = std::find(live_.begin(), live_.end(), a);
  if (it == live_.end()) return;
  live_.erase(it);
  if (a->call) a->call->cancel();  // the worker sees its client go and frees the request
  a->call.reset();
  if (keep_slot) return;
  boost::asio::post(ctx_->core->executor(), [core = ctx_->core, a, succeeded, p = usage ? usage->prompt_tokens : 0,
                                              c = usage ? usage->cached_tokens : 0] {
    core->fleet().finished(a->replica, a->first_token, a->uncached_tokens, p, c);
    if (succeeded) core->fleet().attempt_succeeded(a->replica);
  });
}

void ProxyRequest::attempt_failed(const AttemptPtr& a, const ApiError& why) {
  if (!live(a)) return;
  if (ex_->cancelled()) return end(false, true);
  if (live_.size() > 1) {  // a racing sibling carries on
    close_attempt(a, false);
    boost::asio::post(ctx_->core->executor(), [core = ctx_->core, i = a->replica] {
      core->fleet().attempt_failed(i);
      core->dispatch();
    });
    return rearm_watchdog();
  }
  // The slot goes back in the core's retry decision, which counts the replica's requests
  // with this one still among them (the size of its failure event).
  close_attempt(a, false, nullptr, /*keep_slot=*/true);
  watchdog_.cancel();
  const FailedAttempt f{a->replica, std::hash<std::string>{}(a->info.boot_id), a->first_token, a->uncached_tokens};
  boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), why, f, n = attempts_] {
    if (self->ctx_->core->retry(self, f, n)) return;
    boost::asio::post(self->ex_->executor(), [self, why] {
      if (self->finished_) return;
      self->end(false, false);
      self->responder_.fail(why);
    });
  });
}

void ProxyRequest::rearm_watchdog() {
  if (finished_ || live_.empty()) return watchdog_.cancel(), void();
  SteadyClock::time_point due = SteadyClock::time_point::max();
  for (const AttemptPtr& a : live_) due = std::min(due, silence_limit(a));
  if (!first_token_ && !hedge_asked_ && live_.size() == 1 && timeouts_.hedge_delay > 0)
    due = std::min(due, live_.front()->sent_at + seconds(timeouts_.hedge_delay));
  const uint64_t generation = ++watchdog_generation_;
  watchdog_.expires_at(due);
  watchdog_.async_wait([self = shared_from_this(), generation](boost::system::error_code ec) {
    if (!ec && generation == self->watchdog_generation_) self->on_watchdog();
  });
}

SteadyClock::time_point ProxyRequest::silence_limit(const AttemptPtr& a) const {
  // Until its first token an attempt may prefill (prompt and resumed ids); after it, the
  // stall limit runs from the latest token.
  return a->first_token ? last_token_at_ + seconds(timeouts_.stall) : a->sent_at + seconds(timeouts_.first_token);
}

void ProxyRequest::on_watchdog() {
  if (finished_ || live_.empty()) return;
  const auto now = SteadyClock::now();
  for (const AttemptPtr& a : std::vector<AttemptPtr>(live_)) {
    if (now < silence_limit(a)) continue;
    boost::asio::post(ctx_->core->executor(), [c = ctx_->core] { c->stalled(); });
    attempt_failed(a, a->first_token ? ApiError::unavailable("the worker stalled mid-stream", "upstream_stalled")
                                     : ApiError::unavailable("the worker sent no first token in time", "upstream_stalled"));
    if (finished_ || live_.empty()) return;
  }
  if (!first_token_ && !hedge_asked_ && live_.size() == 1 && timeouts_.hedge_delay > 0 && now - live_.front()->sent_at >= seconds(timeouts_.hedge_delay)) {
    hedge_asked_ = true;
    boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), i = live_.front()->replica, n = attempts_] {
      self->ctx_->core->hedge(self, i, n);
    });
  }
  rearm_watchdog();
}

void ProxyRequest::client_gone() {
  if (finished_) return;
  if (live_.empty()) {
    // Queued (or between attempts): leave the queue. If the core already dispatched it,
    // dispatch() sees the cancelled exchange and ends it.
    boost::asio::post(ctx_->core->executor(), [self = shared_from_this()] {
      if (self->ctx_->core->withdraw(self->id_)) boost::asio::post(self->ex_->executor(), [self] { self->mark_finished(); });
    });
    return;
  }
  end(false, true);
}

void ProxyRequest::end(bool ok, bool cancelled, const Usage* usage) {
  if (finished_) return;
  for (const AttemptPtr& a : std::vector<AttemptPtr>(live_)) close_attempt(a, ok, usage);
  mark_finished();
  watchdog_.cancel();
  boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), ok, cancelled] {
    self->ctx_->core->request_done(*self, ok, cancelled);
  });
}

void ProxyRequest::mark_finished() {
  if (finished_) return;
  finished_ = true;
  --ctx_->open_requests;
}

}  // namespace sy::gateway
