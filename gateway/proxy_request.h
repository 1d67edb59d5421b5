// One client request through the gateway: queued by the core, then sent to the chosen
// worker as POST /internal/generate (prompt token ids and sampling parameters), whose
// token events are relayed to the client as OpenAI chunks or one body. The relay runs on
// the client connection's strand; the core learns the outcome on its own strand.
// Faults stay hidden from the client: before the first token a slow attempt is hedged on
// another replica (first token wins); after it, a failed or stalled attempt continues on
// another replica with the ids already sent (resume_ids) and the same seed.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/http/sse_parser.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/openai.h"
#include "gateway/core.h"
#include "gateway/replica_slot.h"
#include "gateway/request_io.h"
#include "gateway/supervisor.h"
#include "gateway/upstream_call.h"

namespace sy::gateway {

// What every request of one gateway shares.
struct ProxyContext {
  std::shared_ptr<GatewayCore> core;  // its clock times every request
  std::shared_ptr<const Tokenizer> tokenizer;
  uint64_t fingerprint = 0;  // the model's prefix-hash fingerprint (as the workers compute it)
  int32_t block_size = 16;
  std::chrono::milliseconds upstream_idle_timeout{120'000};
  // Requests started and not yet over (answered, failed, withdrawn or rejected),
  // whether queued, in flight or between attempts: the SIGTERM drain waits for 0.
  std::atomic<int64_t> open_requests{0};
  // Draws sampling seeds (requests on several strands draw from it).
  uint64_t draw_seed() {
    std::lock_guard lock(random_mu);
    return random->next();
  }
  std::shared_ptr<policy::Random> random;
  std::mutex random_mu;
};

// The owner of one client request and of everything it holds: its state machine
// (queued → attempt(s) → streaming → done) runs on the client connection's strand, the
// core and the attempts report to it as messages, and the replica slots it holds are
// guards in its attempts.
class ProxyRequest : public std::enable_shared_from_this<ProxyRequest> {
 public:
  ProxyRequest(std::shared_ptr<ProxyContext> ctx, RequestIo io, OpenAiRequest request, std::vector<int32_t> prompt_ids, ResponseHeader header,
               int32_t priority, std::string api_key, uint64_t id);

  // Starts: hands the request to the core and watches for the client leaving.
  void start();

  // For the core's queue and router.
  uint64_t id() const { return id_; }
  PriorityClass priority_class() const { return sy::priority_class(priority_); }
  const std::string& api_key() const { return api_key_; }
  int64_t cost_tokens() const { return static_cast<int64_t>(prompt_ids_.size()) + request_.sampling.max_tokens; }
  const std::vector<uint64_t>& prefix_hashes() const { return hashes_; }
  uint64_t prompt_key() const;  // for prompts shorter than a block
  uint64_t session_key() const;  // a hash of the request's `user` (its session id); 0 without one
  int32_t prompt_tokens() const { return static_cast<int32_t>(prompt_ids_.size()); }

  // Messages from the core strand; each is handled on the request's strand.
  // Answered without a replica (queue full, no replica, shutdown).
  void reject(const ApiError& error, int retry_after_s = 0);
  // An attempt on `slot`'s replica; `hedge`: a second attempt racing the first for the
  // first token (the winner's stream is relayed, the loser cancelled on its worker).
  void dispatch(ReplicaSlot slot, const ReplicaInfo& info, const AttemptTimeouts& timeouts, bool hedge);
  // No replica promised a first token sooner than the attempt had waited: ask for a hedge
  // again once it has waited `waited_s` (from when it was sent) without one.
  void defer_hedge(double waited_s);
  // The core paid no retry for the failed attempt: the request ends with its error.
  void retry_refused();
  // The request left the queue after its client went.
  void withdrawn();

 private:
  // One upstream attempt: a POST /internal/generate on one replica, holding one of its
  // in-flight slots while open.
  struct Attempt {
    int32_t number = 0;
    size_t replica = 0;
    ReplicaSlot slot;
    ReplicaInfo info;
    bool hedge = false;
    std::shared_ptr<CancellableCall> call;
    http::SseParser parser;
    int status = 0;
    std::string error_body;  // a non-200 answer, relayed as is
    bool first_token = false;
    double sent_at = 0;  // clock seconds
    // Its latest "preempted" event with no token since (clock seconds); -1: none. The
    // worker computes the request's context again before its next token.
    double preempted_at = -1;
  };
  using AttemptPtr = std::shared_ptr<Attempt>;

  void on_dispatched(const AttemptPtr& a, const AttemptTimeouts& timeouts);
  void start_attempt(const AttemptPtr& a);
  void on_data(const AttemptPtr& a, std::string_view data);
  void on_done(const AttemptPtr& a, const std::string& what);
  void handle_event(const AttemptPtr& a, const http::SseEvent& e);
  void on_tokens(const AttemptPtr& a, const InternalTokens& t);
  void on_first_token(const AttemptPtr& a, double now);
  // The response's headers naming who answered: x-switchyard-replica (a's replica) and
  // x-switchyard-attempts (the attempts started so far, hedges and retries included).
  void name_replica(const AttemptPtr& a);
  bool live(const AttemptPtr& a) const;
  // Closes attempt a, cancels its call and gives its slot back with `use` (its
  // first_token filled in here); returns the slot instead when `keep_slot`.
  ReplicaSlot close_attempt(const AttemptPtr& a, SlotUse use = {}, bool keep_slot = false);
  // Attempt a failed: a racing sibling carries on alone; else the core decides on another
  // attempt (the budget and max_attempts), and `why` ends the request if it refuses.
  void attempt_failed(const AttemptPtr& a, const ApiError& why);
  // The deadlines of silence: hedge delay and first-token timeout before the first
  // token, the stall timeout after it.
  void rearm_watchdog();
  void on_watchdog();
  double silence_limit(const AttemptPtr& a) const;
  void client_gone();
  // Ends the request: closes what is open and tells the core the outcome, once.
  void end(bool ok, bool cancelled, const Usage* usage = nullptr);
  // The request is over: sets finished_ and leaves ctx_->open_requests, once.
  void mark_finished();
  double now() const { return ctx_->core->clock()->now_s(); }
  // A message to the core: `f(core)` runs on the core strand.
  template <typename F>
  void tell_core(F&& f);

  std::shared_ptr<ProxyContext> ctx_;
  RequestIo io_;
  ClientSide& client_;
  OpenAiRequest request_;
  std::vector<int32_t> prompt_ids_;
  std::vector<uint64_t> hashes_;
  ResponseHeader header_;
  int32_t priority_;
  std::string api_key_;
  uint64_t id_;

  // Session strand.
  std::vector<AttemptPtr> live_;  // one, or two while a hedge races for the first token
  AttemptTimeouts timeouts_;      // of the latest dispatch
  bool hedge_asked_ = false;
  double hedge_at_ = 0;  // clock seconds: when to ask for a hedge (the first attempt's sent_at + hedge delay, or deferred)
  std::vector<int32_t> generated_;
  bool first_token_ = false;  // of the whole request
  int32_t attempts_ = 0;
  bool finished_ = false;         // end() ran
  std::optional<ApiError> failure_;  // the error a refused retry ends the request with
  double arrived_at_ = 0;
  double last_token_at_ = 0;
};

}  // namespace sy::gateway
