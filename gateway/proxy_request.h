// One client request through the gateway: queued by the core, then sent to the chosen
// worker as POST /internal/generate (prompt token ids and sampling parameters), whose
// token events are relayed to the client as OpenAI chunks or one body. The relay runs on
// the client connection's strand; the core learns the outcome on its own strand.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/http/openai_responder.h"
#include "common/http/server.h"
#include "common/http/sse_parser.h"
#include "common/protocol/internal_api.h"
#include "common/protocol/openai.h"
#include "gateway/supervisor.h"
#include "gateway/upstream_call.h"

namespace sy::gateway {

class GatewayCore;

// What every request of one gateway shares.
struct ProxyContext {
  std::shared_ptr<GatewayCore> core;
  std::shared_ptr<const Tokenizer> tokenizer;
  uint64_t fingerprint = 0;  // the model's prefix-hash fingerprint (as the workers compute it)
  int32_t block_size = 16;
  std::chrono::milliseconds upstream_idle_timeout{120'000};
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
  void dispatch(size_t replica, const ReplicaInfo& info, int64_t uncached_tokens);

 private:
  void start_upstream();
  void on_headers(int status, std::string_view content_type);
  void on_data(std::string_view data);
  void on_done(boost::beast::error_code ec, const std::string& what);
  void handle_event(const http::SseEvent& e);
  void client_gone();
  // The current attempt failed: another one if the budget allows, else `why` ends it.
  void attempt_failed(const ApiError& why);
  void end(bool ok, bool cancelled);

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

  // One upstream attempt (session strand).
  size_t replica_ = 0;
  ReplicaInfo replica_info_;
  int64_t uncached_tokens_ = 0;
  std::shared_ptr<UpstreamCall> call_;
  http::SseParser parser_;
  int upstream_status_ = 0;
  std::string error_body_;  // a non-200 answer, relayed as is
  std::vector<int32_t> generated_;
  bool first_token_ = false;          // of the whole request (for TTFT)
  bool attempt_first_token_ = false;  // of the current attempt (for prefill bookkeeping)
  bool attempt_open_ = false;         // the current attempt holds a replica slot
  int32_t attempts_ = 0;
  bool finished_ = false;  // end() ran
  bool dispatched_ = false;
  std::chrono::steady_clock::time_point arrived_at_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point dispatched_at_;
  std::chrono::steady_clock::time_point last_token_at_;
  Usage usage_;
};

}  // namespace sy::gateway
