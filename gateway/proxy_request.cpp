#include "gateway/proxy_request.h"

#include <boost/asio/post.hpp>

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
      responder_(ex_, header_, *ctx_->tokenizer, request_.stream, request_.include_usage, request_.sampling.logprobs >= 0) {}

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
    self->dispatched_at_ = std::chrono::steady_clock::now();
    if (self->ex_->cancelled()) return self->end(false, true);
    self->ex_->add_header("x-switchyard-replica", info.id);
    self->start_upstream();
  });
}

void ProxyRequest::start_upstream() {
  InternalGenerateRequest g;
  g.request_id = "gw-" + header_.id;
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
  if (finished_) return;
  if (upstream_status_ != 200) {
    if (error_body_.size() < 64 * 1024) error_body_.append(data);
    return;
  }
  std::vector<http::SseEvent> events;
  const bool ok = parser_.feed(data, events);
  for (const auto& e : events) {
    handle_event(e);
    if (finished_) return;
  }
  if (!ok) {
    responder_.fail(ApiError::internal("the worker's stream was malformed"));
    end(false, false);
  }
}

void ProxyRequest::handle_event(const http::SseEvent& e) {
  if (e.type == "tokens") {
    InternalTokens t;
    if (parse_internal_tokens(e.data, t)) return;
    const auto now = std::chrono::steady_clock::now();
    if (!first_token_) {
      first_token_ = true;
      const double on_worker = std::chrono::duration<double>(now - dispatched_at_).count();
      const double ttft = std::chrono::duration<double>(now - arrived_at_).count();
      boost::asio::post(ctx_->core->executor(), [core = ctx_->core, i = replica_, n = uncached_tokens_, on_worker, ttft] {
        core->fleet().first_token(i, n, on_worker);
        core->observe_ttft(ttft);
      });
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
    if (auto err = parse_internal_finish(e.data, f)) {
      responder_.fail(ApiError::internal("the worker's finish event was malformed"));
      return end(false, false);
    }
    usage_ = f.usage;
    boost::asio::post(ctx_->core->executor(), [core = ctx_->core, u = f.usage] { core->count_usage(u); });
    responder_.finish(f.finish_reason, f.text, f.usage);
    end(true, false);
  } else if (e.type == "error") {
    responder_.fail(ApiError::unavailable("the worker failed the request: " + e.data, "upstream_error"));
    end(false, false);
  }
}

void ProxyRequest::on_done(boost::beast::error_code ec, const std::string& what) {
  if (finished_) return;
  if (upstream_status_ != 0 && upstream_status_ != 200 && !responder_.begun()) {
    // The worker refused the request before streaming: pass its answer on.
    ex_->respond_json(static_cast<http::Status>(upstream_status_), error_body_);
    return end(false, false);
  }
  responder_.fail(ApiError::unavailable("the worker connection ended before the response was complete (" + what + ")", "upstream_error"));
  end(false, false);
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
  boost::asio::post(ctx_->core->executor(), [self = shared_from_this(), ok, cancelled] {
    GatewayCore& core = *self->ctx_->core;
    core.fleet().finished(self->replica_, self->first_token_, self->uncached_tokens_, self->usage_.prompt_tokens, self->usage_.cached_tokens);
    core.request_done(*self, ok, cancelled);
  });
}

}  // namespace sy::gateway
