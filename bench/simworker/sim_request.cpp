#include "bench/simworker/sim_request.h"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "bench/simworker/sim_engine.h"

namespace sy::sim {

SimRequest::SimRequest(const SimContext& ctx, std::shared_ptr<http::Exchange> ex,
                       std::unique_ptr<SimOutput> out, InternalGenerateRequest req, uint64_t seed,
                       uint64_t jitter_seed, Clock::time_point arrived)
    : ctx_(ctx),
      ex_(std::move(ex)),
      out_(std::move(out)),
      req_(std::move(req)),
      seed_(seed),
      arrived_(arrived),
      decoder_(ctx.tokenizer, req_.sampling.skip_special_tokens),
      timer_(ex_->executor()),
      jitter_rng_(static_cast<std::minstd_rand::result_type>(jitter_seed % 2147483646 + 1)) {
  start_tokens_ = req_.prompt_ids;
  start_tokens_.insert(start_tokens_.end(), req_.resume_ids.begin(), req_.resume_ids.end());
  tokens_ = start_tokens_;
  generated_ = static_cast<int32_t>(req_.resume_ids.size());
  // The other replica sent the resume ids' text; only bytes of a character it could not
  // finish are still owed.
  decoder_.push(req_.resume_ids);
}

int32_t SimRequest::max_context() const {
  return prompt_tokens() + std::max(req_.sampling.max_tokens, static_cast<int32_t>(req_.resume_ids.size()));
}

void SimRequest::admitted(int32_t cached_tokens, int32_t loaded_tokens) {
  boost::asio::post(ex_->executor(),
                    [self = shared_from_this(), cached_tokens, loaded_tokens] { self->begin(cached_tokens, loaded_tokens); });
}

void SimRequest::abort() {
  boost::asio::post(ex_->executor(), [self = shared_from_this()] {
    if (self->done_) return;
    self->done_ = true;
    self->timer_.cancel();
    self->stop_decoding();
    self->ctx_.engine.finished(*self, true);
    self->out_->abort(ApiError::unavailable("the request was aborted: the worker is shutting down", "aborted"));
  });
}

void SimRequest::cancel() {
  if (done_) return;
  done_ = true;
  timer_.cancel();
  stop_decoding();
  ctx_.engine.finished(*this, true);
}

void SimRequest::stop_decoding() {
  if (!decoding_) return;
  decoding_ = false;
  ctx_.engine.decoding(-1);
}

double SimRequest::jittered(double ms) {
  const double j = ctx_.timing.jitter;
  if (j <= 0) return ms;
  std::uniform_real_distribution<double> factor(1 - j, 1 + j);
  return ms * factor(jitter_rng_);
}

void SimRequest::arm(double ms, void (SimRequest::*next)()) {
  timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms)));
  timer_.async_wait([self = shared_from_this(), next](boost::system::error_code ec) {
    if (ec || self->done_) return;
    ((*self).*next)();
  });
}

void SimRequest::begin(int32_t cached_tokens, int32_t loaded_tokens) {
  if (done_) return;
  cached_tokens_ = cached_tokens;
  const auto uncached = static_cast<double>(start_tokens_.size()) - cached_tokens;
  const double prefill_ms = jittered(ctx_.timing.prefill_us_per_token * uncached / 1000.0 +
                                     ctx_.timing.host_load_us_per_token * loaded_tokens / 1000.0);
  const double ttft_ms = jittered(ctx_.timing.ttft_ms);
  if (!ctx_.timing.serial_prefill) return arm(ttft_ms + prefill_ms, &SimRequest::first_token);
  prefill_ = ctx_.engine.queue_prefill(prefill_ms);
  ttft_ms_ = ttft_ms;
  arm(prefill_.done_in_ms, &SimRequest::prefilled);
}

void SimRequest::prefilled() {
  const double left = ctx_.engine.prefill_left_ms(prefill_);
  if (left > 0.01) return arm(left, &SimRequest::prefilled);
  arm(ttft_ms_, &SimRequest::first_token);
}

void SimRequest::first_token() {
  ctx_.engine.computed(*this, tokens_);
  ctx_.engine.stats().prefix_cache_hit_tokens_total += cached_tokens_;
  ctx_.engine.stats().prefill_tokens_total += static_cast<int64_t>(start_tokens_.size()) - cached_tokens_;
  decoding_ = true;
  ctx_.engine.decoding(+1);
  next_token();
}

void SimRequest::next_token() {
  const auto now = Clock::now();
  if (last_token_at_ == Clock::time_point{})
    ctx_.metrics.ttft->observe(std::chrono::duration<double>(now - arrived_).count());
  else
    ctx_.metrics.itl->observe(std::chrono::duration<double>(now - last_token_at_).count());
  last_token_at_ = now;
  ++ctx_.engine.stats().generation_tokens_total;

  const int32_t index = generated_++;
  const int32_t id = ctx_.tokens.token(seed_, index);
  const auto& stops = req_.sampling.stop_token_ids;
  if (std::find(stops.begin(), stops.end(), id) != stops.end())  // counted, not sent
    return end("stop", ctx_.tokenizer.token_text(id));
  tokens_.push_back(id);
  if (!out_->token(index, id, decoder_.push(id), req_.sampling.logprobs >= 0)) return cancel();
  if (generated_ >= req_.sampling.max_tokens) return end("length", {});
  ctx_.engine.computed(*this, std::span<const int32_t>(tokens_).first(tokens_.size() - 1));
  arm(jittered(ctx_.timing.itl_ms) * ctx_.engine.decode_slowdown(), &SimRequest::next_token);
}

void SimRequest::end(const char* reason, std::string matched_stop) {
  done_ = true;
  stop_decoding();
  ctx_.engine.finished(*this, false);
  InternalFinish fin;
  fin.finish_reason = reason;
  fin.text = decoder_.finish();
  fin.matched_stop = std::move(matched_stop);
  fin.usage = Usage{prompt_tokens(), generated_, std::min(cached_tokens_, prompt_tokens())};
  out_->finish(fin);
  ctx_.metrics.e2e->observe(std::chrono::duration<double>(Clock::now() - arrived_).count());
}

}  // namespace sy::sim
