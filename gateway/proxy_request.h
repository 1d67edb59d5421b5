// One client request through the gateway: queued by the core, then sent to the chosen
// worker as POST /internal/generate (prompt token ids and sampling parameters), whose
// token events are relayed to the client as OpenAI chunks or one body. The relay runs on
// the client connection's strand; the core learns the outcome on its own strand.
// Faults stay hidden from the client: before the first token a slow attempt is hedged on
// another replica (first token wins); after it, a failed or stalled attempt continues on
// another replica with the ids already sent (resume_ids) and the same seed.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/http/openai_responder.h"
#include "common/http/server.h"
#include "common/http/sse_parser.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/openai.h"
#include "gateway/core.h"
#include "gateway/supervisor.h"
#include "gateway/upstream_call.h"

namespace sy::gateway {

// What every request of one gateway shares.
struct ProxyContext {
  std::shared_ptr<GatewayCore> core;
  std::shared_ptr<const Tokenizer> tokenizer;
  uint64_t fingerprint = 0;  // the model's prefix-hash fingerprint (as the workers compute it)
  int32_t block_size = 16;
  std::chrono::milliseconds upstream_idle_timeout{120'000};
  // Requests started and not yet over (answered, failed, withdrawn or rejected),
  // whether queued, in flight or between attempts: the SIGTERM drain waits for 0.
  std::atomic<int64_t> open_requests{0};
};

class ProxyRequest : public std::enable_shared_from_this<ProxyRequest> {
 public:
  ProxyRequest(std::shared_ptr<ProxyContext> ctx, std::shared_ptr<http::Exchange> exchange, OpenAiRequest request,
               std::vector<int32_t> prompt_ids, ResponseHeader header, int32_t priority, std::string api_key, uint64_t id);

  // Starts: hands the request to the core and watches for the client leaving.
  void start();

  // For the core's queue and router.
  uint64_t id() const { return id_; }
  PriorityClass priority_class() const { return sy::priority_class(priority_); }
  const std::string& api_key() const { return api_key_; }
  int64_t cost_tokens() const { return static_cast<int64_t>(prompt_ids_.size()) + request_.sampling.max_tokens; }
  const std::vector<uint64_t>& prefix_hashes() const { return hashes_; }
  uint64_t prompt_key() const;  // for prompts shorter than a block
  int32_t prompt_tokens() const { return static_cast<int32_t>(prompt_ids_.size()); }

  // From the core strand.
  void reject(const ApiError& error, int retry_after_s = 0);
  // Sends an attempt to `replica`; `hedge`: a second attempt racing the first for the
  // first token (the winner's stream is relayed, the loser cancelled on its worker).
  void dispatch(size_t replica, const ReplicaInfo& info, int64_t uncached_tokens, const AttemptTimeouts& timeouts, bool hedge);

 private:
  // One upstream attempt: a POST /internal/generate on one replica, holding one of its
  // in-flight slots while open.
  struct Attempt {
    int32_t number = 0;
    size_t replica = 0;
    ReplicaInfo info;
    int64_t uncached_tokens = 0;
    bool hedge = false;
    std::shared_ptr<UpstreamCall> call;
    http::SseParser parser;
    int status = 0;
    std::string error_body;  // a non-200 answer, relayed as is
    bool first_token = false;
    std::chrono::steady_clock::time_point sent_at;
  };
  using AttemptPtr = std::shared_ptr<Attempt>;

  void start_attempt(const AttemptPtr& a);
  void on_data(const AttemptPtr& a, std::string_view data);
  void on_done(const AttemptPtr& a, boost::beast::error_code ec, const std::string& what);
  void handle_event(const AttemptPtr& a, const http::SseEvent& e);
  void on_tokens(const AttemptPtr& a, const InternalTokens& t);
  bool live(const AttemptPtr& a) const;
  // Closes attempt a and gives its replica slot back (unless `keep_slot`: the core's retry
  // decision gives it back); `usage` when it finished the request.
  void close_attempt(const AttemptPtr& a, bool succeeded, const Usage* usage = nullptr, bool keep_slot = false);
  // Attempt a failed: a racing sibling carries on alone; else another attempt if the
  // budget and max_attempts allow, else `why` ends the request.
  void attempt_failed(const AttemptPtr& a, const ApiError& why);
  // The deadlines of silence: hedge delay and first-token timeout before the first
  // token, the stall timeout after it.
  void rearm_watchdog();
  void on_watchdog();
  std::chrono::steady_clock::time_point silence_limit(const AttemptPtr& a) const;
  void client_gone();
  void end(bool ok, bool cancelled, const Usage* usage = nullptr);
  // The request is over: sets finished_ and leaves ctx_->open_requests, once.
  void mark_finished();

  std::shared_ptr<ProxyContext> ctx_;
  std::shared_ptr<http::Exchange> ex_;
  OpenAiRequest request_;
  std::vector<int32_t> prompt_ids_;
  std::vector<uint64_t> hashes_;
  ResponseHeader header_;
  int32_t priority_;
  std::string api_key_;
  uint64_t id_;
  http::OpenAiResponder responder_;

  // Session strand.
  std::vector<AttemptPtr> live_;  // one, or two while a hedge races for the first token
  AttemptTimeouts timeouts_;      // of the latest dispatch
  boost::asio::steady_timer watchdog_;
  uint64_t watchdog_generation_ = 0;
  bool hedge_asked_ = false;
  std::vector<int32_t> generated_;
  bool first_token_ = false;  // of the whole request
  int32_t attempts_ = 0;
  bool finished_ = false;  // end() ran
  std::chrono::steady_clock::time_point arrived_at_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_token_at_;
};

}  // namespace sy::gateway
