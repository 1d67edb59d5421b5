#include "gateway/proxy_request.h"

#include <boost/asio/post.hpp>
#include <random>

#include "gateway/core.h"
#include "policy/block_hash.h"

namespace sy::gateway {

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
      responder_(ex_, header_, *ctx_->tokenizer, request_.stream, request_.include_usage, request_.sampling.logprobs >= 0) {
  // A continuation elsewhere must draw the same random numbers: fix the seed now.
  if (!request_.sampling.greedy() && !request_.sampling.seed) request_.sampling.seed = std::random_device{}() * 0x100000001ull + id_;
}

uint64_t ProxyRequest::prompt_key() const {
  return policy::chain_block_hash(ctx_->fingerprint, prompt_ids_);
}

void ProxyRequest::start() {
  auto self = shared_from_this();
  ex_->on_cancel([self] { self->client_gone(); });
  boost::asio::post(ctx_->core->executor(), [self] { self->ctx_->core->submit(self); });
}

void ProxyRequest::reject(const ApiError& error, int retry_after_s) {
  boost::asio::post(ex_->executor(), [self = shared_from_this(), error, retry_after_s] {
    self->finished_ = true;
    if (retry_after_s > 0) self->ex_->add_header("Retry-After", std::to_string(retry_after_s));
    self->responder_.fail(error);
  });
}

void ProxyRequest::dispatch(size_t replica, const ReplicaInfo& info, int64_t uncached_tokens) {
  boost::asio::post(ex_->executor(), [self = shared_from_this(), replica, info, uncached_tokens] {
    self->replica_ = replica;
    self->replica_info_ = info;
    self->uncached_tokens_ = uncached_tokens;
    self->dispatched_ = true;
    self->attempt_open_ = true;
    self->attempt_first_token_ = false;
    ++self->attempts_;
    self->dispatched_at_ = std::chrono::steady_clock::now();
    if (self->finished_) {  // ended meanwhile (cannot normally happen): give the slot back
      self->attempt_open_ = false;
      boost::asio::post(self->ctx_->core->executor(), [core = self->ctx_->core, replica, uncached_tokens] {
        core->fleet().finished(replica, false, uncached_tokens, 0, 0);
        core->dispatch();
      });
      return;
    }
    if (self->ex_->cancelled()) return self->end(false, true);
    self->ex_->add_header("x-switchyard-replica", info.id);
    self->start_upstream();
  });
}

void ProxyRequest::start_upstream() {
  InternalGenerateRequest g;
  g.request_id = "gw-" + header_.id + "-" + std::to_string(attempts_);  // a stalled earlier attempt may still live
  g.prompt_ids = prompt_ids_;
  g.resume_ids = generated_;
  g.sampling = request_.sampling;
  g.priority = priority_;
  UpstreamRequest req;
  req.host = replica_info_.host;
  req.port = replica_info_.port;
  req.method = "POST";
  req.target = "/internal/generate";
  req.body = internal_generate_body(g);
  req.idle_timeout = ctx_->upstream_idle_timeout;
  UpstreamHandlers h;
  auto self = shared_from_this();
  h.on_headers = [self](int status, std::string_view ct) { self->on_headers(status, ct); };
  h.on_data = [self](std::string_view d) { self->on_data(d); };
  h.on_done = [self](boost::beast::error_code ec, std::string what) { self->on_done(ec, what); };
  parser_ = http::SseParser();
  upstream_status_ = 0;
  error_body_.clear();
  call_ = UpstreamCall::start(ex_->executor(), std::move(req), std::move(h));
}

void ProxyRequest::on_headers(int status, std::string_view) { upstream_status_ = status; }

void ProxyRequest::on_data(std::string_view data) {
  if (finished_ || !attempt_open_) return;
  if (upstream_status_ != 200) {
    if (error_body_.size() < 64 * 1024) error_body_.append(data);
    return;
  }
  std::vector<http::SseEvent> events;
  const bool ok = parser_.feed(data, events);
  for (const auto& e : events) {
    handle_event(e);
    if (finished_ || !attempt_open_) return;  // ended, or this attempt failed
  }
  if (!ok) attempt_failed(ApiError::internal("the worker's stream was malformed"));
}

void ProxyRequest::handle_event(const http::SseEvent& e) {
  if (e.type == "tokens") {
    InternalTokens t;
    if (parse_internal_tokens(e.data, t)) return;
    if (t.index != static_cast<int32_t>(generated_.size())) {  // a gap or a repeat: not the stream we asked for
      return attempt_failed(ApiError::internal("the worker's token stream was out of order"));
    }
    const auto now = std::chrono::steady_clock::now();
    if (!attempt_first_token_) {
      attempt_first_token_ = true;
      const double on_worker = std::chrono::duration<double>(now - dispatched_at_).count();
      boost::asio::post(ctx_->core->executor(), [core = ctx_->core, i = replica_, n = uncached_tokens_, on_worker] {
        core->fleet().first_token(i, n, on_worker);
      });
    }
    if (!first_token_) {
      first_token_ = true;
      const double ttft = std::chrono::duration<double>(now - arrived_at_).count();
      boost::asio::post(ctx_->core->executor(), [core = ctx_->core, ttft] { core->observe_ttft(ttft); });
      boost::asio::post(ctx_->core->executor(), [core = ctx_->core, n = static_cast<int64_t>(t.ids.size())] { core->count_output(n); });
    } else if (!t.ids.empty()) {
      const double gap = std::chrono::duration<double>(now - last_token_at_).count() / static_cast<double>(t.ids.size());
      boost::asio::post(ctx_->core->executor(), [core = ctx_->core, gap, n = static_cast<int64_t>(t.ids.size())] {
        core->observe_itl(gap);
        core->count_output(n);
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
  } else if (e.type == "finish") {
    InternalFinish f;
    if (auto err = parse_internal_finish(e.data, f)) return attempt_failed(ApiError::internal("the worker's finish event was malformed"));
    usage_ = f.usage;
    boost::asio::post(ctx_->core->executor(), [core = ctx_->core, u = f.usage] { core->count_usage(u); });
    responder_.finish(f.finish_reason, f.text, f.usage);
    end(true, false);
  } else if (e.type == "error") {  // the worker aborted (shutdown) or failed: try elsewhere
    attempt_failed(ApiError::unavailable("the worker failed the request: " + e.data, "upstream_error"));
  }
}

void ProxyRequest::on_done(boost::beast::error_code ec, const std::string& what) {
  if (finished_ || !attempt_open_) return;
  if (upstream_status_ >= 400 && upstream_status_ < 500 && !responder_.begun()) {
    // The worker refused the request itself: pass its answer on (another would too).
    ex_->respond_json(static_cast<http::Status>(upstream_status_), error_body_);
    return end(false, false);
  }
  const std::string why = upstream_status_ >= 500 ? "answered " + std::to_string(upstream_status_) : what;
  attempt_failed(ApiError::unavailable("the worker connection ended before the response was complete (" + why + ")", "upstream_error"));
}

void ProxyRequest::attempt_failed(const ApiError& why) {
  if (finished_ || !attempt_open_) return;
  if (ex_->cancelled()) return end(false, true);
  attempt_open_ = false;
  dispatched_ = false;
  if (call_) call_->cancel();
  call_.reset();
  boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), why, i = replica_, first = attempt_first_token_, n = uncached_tokens_] {
    GatewayCore& core = *self->ctx_->core;
    core.fleet().finished(i, first, n, 0, 0);
    if (core.retry(self, i)) return;
    boost::asio::post(self->ex_->executor(), [self, why] {
      if (self->finished_) return;
      self->finished_ = true;
      self->responder_.fail(why);
      boost::asio::post(self->ctx_->core->executor(), [self] { self->ctx_->core->request_done(*self, false, false); });
    });
  });
}

void ProxyRequest::client_gone() {
  if (finished_) return;
  if (!dispatched_) {
    // Still queued: leave the queue (if the core already dispatched it, dispatch() sees
    // the cancelled exchange and ends it).
    boost::asio::post(ctx_->core->executor(), [self = shared_from_this()] { self->ctx_->core->withdraw(self->id_); });
    return;
  }
  if (call_) call_->cancel();  // the worker sees its client go and frees the request
  end(false, true);
}

void ProxyRequest::end(bool ok, bool cancelled) {
  if (finished_) return;
  finished_ = true;
  if (call_) call_->cancel();
  const bool holds_slot = attempt_open_;
  attempt_open_ = false;
  boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), ok, cancelled, holds_slot] {
    GatewayCore& core = *self->ctx_->core;
    if (holds_slot) {
      core.fleet().finished(self->replica_, self->attempt_first_token_, self->uncached_tokens_, self->usage_.prompt_tokens, self->usage_.cached_tokens);
      if (ok) core.fleet().attempt_succeeded(self->replica_);
    }
    core.request_done(*self, ok, cancelled);
  });
}

}  // namespace sy::gateway
