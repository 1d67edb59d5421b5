// The worker's internal API for the gateway (docs/PROTOCOL.md is the reference):
// POST /internal/generate takes prompt token ids, ids already generated elsewhere and
// sampling parameters, and streams token ids with their text as server-sent events;
// GET /internal/kv-events streams the prefix cache's stored and removed block hashes.
// Builders are used by the worker, parsers by the gateway (and tests); both sides share
// this file so that they cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"
#include "common/protocol/sampling_params.h"

namespace sy {

struct InternalGenerateRequest {
  std::string request_id;  // 1-128 of [A-Za-z0-9._:-]; unique among the worker's live requests
  std::vector<int32_t> prompt_ids;  // not empty
  std::vector<int32_t> resume_ids;  // generated before, elsewhere: continued, not re-sent
  SamplingParams sampling;          // max_tokens counts resume_ids; logprobs -1 = none
  int32_t priority = kPriorityStandard;
  // A tool-call constraint spec (common/constrain/tool_constraint.h), opaque here; null: none.
  Json constraint = nullptr;
};

// Body checks only; ids against the vocabulary and lengths against the context are the
// worker's (it knows the model).
std::optional<ApiError> parse_internal_generate(std::string_view body,
                                                InternalGenerateRequest& out);
std::string internal_generate_body(const InternalGenerateRequest& r);
// The worker's checks against its model: prompt, resume and stop token ids in
// [0, vocab), and prompt + max(max_tokens, resume ids) within the context
// (400 context_length_exceeded).
std::optional<ApiError> check_internal_generate(const InternalGenerateRequest& r,
                                                const ModelLimits& limits);

struct InternalTokenLogprob {
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // best first
};

// "event: tokens": ids generated (index = position of ids[0] among all generated ids,
// resume ids included) and the text they complete.
struct InternalTokens {
  int32_t index = 0;
  std::vector<int32_t> ids;
  std::string text;
  std::vector<InternalTokenLogprob> logprobs;  // one per id when requested, else empty
};

// "event: finish": the clean end of the stream.
struct InternalFinish {
  std::string finish_reason;  // "stop" | "length"
  std::string text;           // text held back until the end
  std::string matched_stop;   // the stop string or stop token text, if one ended it
  Usage usage;                // completion_tokens counts resume ids and a stop token
};

// "event: preempted": the worker freed the request's KV blocks to make room for others and
// will compute its context again (`recompute_tokens`: the prompt and generated tokens so
// far) before its next token. The stream is alive, only silent meanwhile.
struct InternalPreempted {
  int32_t recompute_tokens = 0;
};

std::string internal_tokens_event(const InternalTokens& t);  // "event: tokens\ndata: {...}\n\n"
std::string internal_preempted_event(const InternalPreempted& p);  // "event: preempted\ndata: {...}\n\n"
std::string internal_finish_event(const InternalFinish& f);  // "event: finish\ndata: {...}\n\n"
// The `data` of an event (without "data: "), as an SSE parser delivers it.
std::optional<ApiError> parse_internal_tokens(std::string_view data, InternalTokens& out);
std::optional<ApiError> parse_internal_finish(std::string_view data, InternalFinish& out);
std::optional<ApiError> parse_internal_preempted(std::string_view data, InternalPreempted& out);

// /internal/kv-events: one event per change, the first a snapshot of every cached hash.
struct KvEventWire {
  uint64_t seq = 0;
  bool stored = true;  // "stored" | "removed"
  std::vector<uint64_t> hashes;
};
std::string kv_event_data(const KvEventWire& e);  // "data: {...}\n\n"
std::optional<ApiError> parse_kv_event(std::string_view data, KvEventWire& out);

// GET /ready (200 when ready, else 503, with this body either way). A supervisor trusts
// readiness only with the boot id it gave the worker.
struct WorkerReadiness {
  bool ready = false;
  std::string boot_id;
  int64_t pid = 0;
  int32_t block_size = 0;
  int32_t max_num_seqs = 0;
  std::string model;  // the served name
  uint64_t model_fingerprint = 0;
  int32_t max_model_len = 0;
  int64_t kv_blocks_total = 0;
};
std::string worker_readiness_json(const WorkerReadiness& r);

// GET /v1/models: the served names (created: unix seconds).
std::string models_list_json(const std::vector<std::string>& names, int64_t created,
                             int32_t max_model_len);

}  // namespace sy
