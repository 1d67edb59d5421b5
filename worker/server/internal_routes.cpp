// The gateway's endpoints: POST /internal/generate (token ids in; token ids and their
// text out, as SSE) and GET /internal/kv-events (the prefix cache's hashes, as SSE).
// Wire formats: common/protocol/internal_api.h and docs/PROTOCOL.md.
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/protocol/internal_api.h"
#include "worker/server/routes.h"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kKvPingInterval{15};

class InternalSink : public RequestSink, public std::enable_shared_from_this<InternalSink> {
 public:
  InternalSink(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex,
               std::string id, int32_t first_index, bool logprobs, Clock::time_point arrived)
      : s_(std::move(s)),
        ex_(std::move(ex)),
        id_(std::move(id)),
        index_(first_index),
        logprobs_(logprobs),
        arrived_(arrived) {}

  void on_tokens(std::vector<TokenEvent> tokens) override {
    boost::asio::post(ex_->executor(),
                      [self = shared_from_this(), t = std::move(tokens)]() mutable {
                        self->tokens(std::move(t));
                      });
  }
  void on_finish(FinishEvent f) override {
    boost::asio::post(ex_->executor(), [self = shared_from_this(), f = std::move(f)]() mutable {
      self->finish(std::move(f));
    });
  }

 private:
  void tokens(std::vector<TokenEvent> tokens) {
    InternalTokens ev;
    ev.index = index_;
    for (auto& t : tokens) {
      ev.ids.push_back(t.id);
      ev.text += t.text;
      if (logprobs_)
        ev.logprobs.push_back(InternalTokenLogprob{t.logprob, std::move(t.top_logprobs)});
    }
    index_ += static_cast<int32_t>(ev.ids.size());
    ex_->write(internal_tokens_event(ev));
  }

  void finish(FinishEvent f) {
    s_->release_id(id_);
    s_->e2e->observe(std::chrono::duration<double>(Clock::now() - arrived_).count());
    if (f.reason == FinishReason::kStop || f.reason == FinishReason::kLength) {
      InternalFinish fin{finish_reason_name(f.reason), std::move(f.text), std::move(f.matched_stop),
                         Usage{f.prompt_tokens, f.completion_tokens, f.cached_tokens}};
      ex_->write(internal_finish_event(fin));
    } else {
      ex_->write(
          sse_error(f.reason == FinishReason::kAbort
                        ? ApiError::unavailable(
                              "the request was aborted: the worker is shutting down", "aborted")
                        : ApiError::internal(f.error.empty() ? "generation failed" : f.error)));
    }
    ex_->finish();
  }

  std::shared_ptr<WorkerServer::Shared> s_;
  std::shared_ptr<http::Exchange> ex_;
  const std::string id_;
  int32_t index_;  // position of the next id among all generated ones (resume ids first)
  const bool logprobs_;
  const Clock::time_point arrived_;
};

std::optional<ApiError> check_ids(const std::vector<int32_t>& ids, int32_t vocab,
                                  const char* field) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      return ApiError::bad_request(
          std::string(field) + "[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
              " is outside the vocabulary [0, " + std::to_string(vocab) + ")",
          field);
  return std::nullopt;
}

// One subscriber of the KV event hub: drains it on the connection's strand whenever the
// engine publishes, and pings while nothing happens so that either side notices a dead
// peer.
class KvStream : public KvStreamHandle, public std::enable_shared_from_this<KvStream> {
 public:
  KvStream(Engine& engine, std::shared_ptr<http::Exchange> ex)
      : engine_(engine), ex_(std::move(ex)), ping_(ex_->executor()) {}

  void start() {
    std::weak_ptr<KvStream> weak = weak_from_this();
    auto exec = ex_->executor();
    // notify runs on the engine thread: it only schedules a drain.
    sub_ = engine_.kv_events().subscribe([weak, exec] {
      boost::asio::post(exec, [weak] {
        if (auto self = weak.lock()) self->drain();
      });
    });
    ex_->on_cancel([self = shared_from_this()] { self->stop(); });
    drain();  // the snapshot
    arm_ping();
  }

  void close() override {
    boost::asio::post(ex_->executor(), [self = shared_from_this()] {
      self->ex_->finish();
      self->stop();
    });
  }

 private:
  void drain() {
    if (!sub_) return;
    std::string out;
    for (const KvEvent& e : sub_->drain())
      out += kv_event_data(KvEventWire{e.seq, e.type == KvEvent::Type::kStored, e.hashes});
    if (!out.empty() && !ex_->write(std::move(out))) return stop();
    if (sub_->overflowed()) {
      // Too far behind to catch up: the client reconnects and starts from a snapshot.
      ex_->write(sse_error(ApiError::unavailable(
          "kv event subscriber fell too far behind; reconnect", "kv_events_overflow")));
      ex_->finish();
      stop();
    }
  }

  void arm_ping() {
    ping_.expires_after(kKvPingInterval);
    ping_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || !self->sub_) return;
      if (!self->ex_->write(": ping\n\n")) return self->stop();
      self->arm_ping();
    });
  }

  void stop() {
    sub_.reset();  // unsubscribes
    ping_.cancel();
  }

  Engine& engine_;
  std::shared_ptr<http::Exchange> ex_;
  boost::asio::steady_timer ping_;
  std::shared_ptr<KvSubscription> sub_;
};

}  // namespace

void handle_internal_generate(std::shared_ptr<WorkerServer::Shared> s,
                              std::shared_ptr<http::Exchange> ex) {
  const auto arrived = Clock::now();
  s->requests_total[WorkerServer::Shared::kGenerate]->inc();
  InternalGenerateRequest req;
  if (auto e = parse_internal_generate(ex->request().body(), req)) return ex->respond_error(*e);
  if (!s->admit(*ex)) return;
  const int32_t vocab = s->limits.vocab_size;
  for (auto [ids, field] : {std::pair{&req.prompt_ids, "prompt_ids"},
                            {&req.resume_ids, "resume_ids"},
                            {&req.sampling.stop_token_ids, "stop_token_ids"}})
    if (auto e = check_ids(*ids, vocab, field)) return ex->respond_error(*e);
  const int64_t total =
      static_cast<int64_t>(req.prompt_ids.size()) +
      std::max<int64_t>(req.sampling.max_tokens, static_cast<int64_t>(req.resume_ids.size()));
  if (total > s->limits.context_length)
    return ex->respond_error(ApiError::bad_request(
        "prompt_ids (" + std::to_string(req.prompt_ids.size()) + ") plus max_tokens (" +
            std::to_string(req.sampling.max_tokens) + ") exceed the context of " +
            std::to_string(s->limits.context_length) + " tokens",
        "max_tokens", "context_length_exceeded"));
  if (!s->claim_id(req.request_id))
    return ex->respond_error(ApiError{409, "invalid_request_error",
                                      "request_id '" + req.request_id + "' is already running",
                                      "request_id", "duplicate_request_id"});
  const bool logprobs = req.sampling.logprobs >= 0;
  auto sink = std::make_shared<InternalSink>(
      s, ex, req.request_id, static_cast<int32_t>(req.resume_ids.size()), logprobs, arrived);
  ex->start_stream();
  ex->on_cancel([s, id = req.request_id] { s->engine.cancel(id); });
  EngineRequest er;
  er.id = req.request_id;
  er.prompt_ids = std::move(req.prompt_ids);
  er.resume_ids = std::move(req.resume_ids);
  er.sampling = std::move(req.sampling);
  er.priority = req.priority;
  er.sink = std::move(sink);
  s->engine.submit(std::move(er));
}

void handle_kv_events(std::shared_ptr<WorkerServer::Shared> s, std::shared_ptr<http::Exchange> ex) {
  s->requests_total[WorkerServer::Shared::kKvEvents]->inc();
  if (s->stopping.load())
    return ex->respond_error(ApiError::unavailable("the worker is shutting down", "shutting_down"));
  ex->start_stream();
  auto stream = std::make_shared<KvStream>(s->engine, ex);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    std::erase_if(s->kv_streams,
                  [](const std::weak_ptr<KvStreamHandle>& w) { return w.expired(); });
    s->kv_streams.push_back(stream);
  }
  stream->start();
  if (s->stopping.load()) stream->close();  // shutdown() may have missed it
}

}  // namespace sy
