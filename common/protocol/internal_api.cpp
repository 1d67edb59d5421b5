#include "common/protocol/internal_api.h"

#include <algorithm>
#include <limits>

namespace sy {
namespace {

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Json internal_usage_json(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"cached_tokens", u.cached_tokens}};
}

std::string event(const char* name, const Json& data) {
  return std::string("event: ") + name + "\ndata: " + dump_json(data) + "\n\n";
}

std::optional<ApiError> parse_data(std::string_view data, Json& j) {
  if (auto e = parse_json_object(data, j)) return e;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_internal_generate(std::string_view body,
                                                InternalGenerateRequest& out) {
  out = InternalGenerateRequest{};
  Json j;
  if (auto e = parse_json_object(body, j)) return e;
  FieldReader r(j);
  if (!r.get_string("request_id", out.request_id) && r.ok())
    r.fail("'request_id' is required", "request_id");
  if (r.ok() && !valid_request_id(out.request_id))
    r.fail("'request_id' must be 1 to 128 characters of A-Z a-z 0-9 . _ : -", "request_id");
  if (!r.get_int32_list("prompt_ids", 0, FieldReader::kInt32Max, std::numeric_limits<size_t>::max(),
                        out.prompt_ids) &&
      r.ok())
    r.fail("'prompt_ids' is required", "prompt_ids");
  if (r.ok() && out.prompt_ids.empty()) r.fail("'prompt_ids' must not be empty", "prompt_ids");
  r.get_int32_list("resume_ids", 0, FieldReader::kInt32Max, std::numeric_limits<size_t>::max(), out.resume_ids);
  if (!r.get_int32("max_tokens", 1, FieldReader::kInt32Max, out.sampling.max_tokens) && r.ok())
    r.fail("'max_tokens' is required", "max_tokens");
  read_sampling_fields(r, out.sampling);
  r.get_int32("logprobs", -1, 20, out.sampling.logprobs);
  if (const Json* p = r.find("priority"); p && r.ok()) {
    if (auto e = parse_priority_value(*p, "priority", out.priority)) r.fail(e->message, "priority");
  }
  if (const Json* c = r.find("constraint"); c && r.ok()) {
    if (!c->is_object() && !c->is_null()) r.fail("'constraint' must be an object", "constraint");
    else out.constraint = *c;
  }
  if (!r.ok()) return r.error();
  if (const std::string bad = out.sampling.validate(); !bad.empty())
    return ApiError::bad_request(bad, sampling_error_field(bad));
  return std::nullopt;
}

std::optional<ApiError> check_internal_generate(const InternalGenerateRequest& r,
                                                const ModelLimits& limits) {
  for (auto [ids, field] : {std::pair{&r.prompt_ids, "prompt_ids"},
                            {&r.resume_ids, "resume_ids"},
                            {&r.sampling.stop_token_ids, "stop_token_ids"}})
    for (size_t i = 0; i < ids->size(); ++i)
      if ((*ids)[i] >= limits.vocab_size)
        return ApiError::bad_request(std::string(field) + "[" + std::to_string(i) + "] = " +
                                         std::to_string((*ids)[i]) +
                                         " is outside the vocabulary [0, " +
                                         std::to_string(limits.vocab_size) + ")",
                                     field);
  const int64_t total =
      static_cast<int64_t>(r.prompt_ids.size()) +
      std::max<int64_t>(r.sampling.max_tokens, static_cast<int64_t>(r.resume_ids.size()));
  if (total > limits.context_length)
    return ApiError::bad_request(
        "prompt_ids (" + std::to_string(r.prompt_ids.size()) + ") plus max_tokens (" +
            std::to_string(r.sampling.max_tokens) + ") exceed the context of " +
            std::to_string(limits.context_length) + " tokens",
        "max_tokens", "context_length_exceeded");
  return std::nullopt;
}

std::string internal_generate_body(const InternalGenerateRequest& r) {
  const SamplingParams& s = r.sampling;
  Json j;
  j["request_id"] = r.request_id;
  j["prompt_ids"] = r.prompt_ids;
  j["resume_ids"] = r.resume_ids;
  j["max_tokens"] = s.max_tokens;
  j["temperature"] = s.temperature;
  j["top_p"] = s.top_p;
  j["top_k"] = s.top_k;
  j["min_p"] = s.min_p;
  j["repetition_penalty"] = s.repetition_penalty;
  j["presence_penalty"] = s.presence_penalty;
  j["frequency_penalty"] = s.frequency_penalty;
  if (s.seed) j["seed"] = *s.seed;
  j["stop"] = s.stop;
  j["stop_token_ids"] = s.stop_token_ids;
  j["ignore_eos"] = s.ignore_eos;
  j["skip_special_tokens"] = s.skip_special_tokens;
  j["logprobs"] = s.logprobs;
  j["priority"] = r.priority;
  if (!r.constraint.is_null()) j["constraint"] = r.constraint;
  return dump_json(j);
}

std::string internal_tokens_event(const InternalTokens& t) {
  Json j;
  j["index"] = t.index;
  j["ids"] = t.ids;
  j["text"] = t.text;
  if (!t.logprobs.empty()) {
    Json lps = Json::array();
    for (const auto& lp : t.logprobs) {
      Json top = Json::array();
      for (const auto& [id, v] : lp.top) top.push_back(Json::array({id, v}));
      lps.push_back(Json{{"logprob", lp.logprob}, {"top", std::move(top)}});
    }
    j["logprobs"] = std::move(lps);
  }
  return event("tokens", j);
}

std::string internal_preempted_event(const InternalPreempted& p) {
  Json j;
  j["recompute_tokens"] = p.recompute_tokens;
  return event("preempted", j);
}

std::optional<ApiError> parse_internal_preempted(std::string_view data, InternalPreempted& out) {
  out = InternalPreempted{};
  Json j;
  if (auto e = parse_data(data, j)) return e;
  FieldReader r(j);
  r.get_int32("recompute_tokens", 0, FieldReader::kInt32Max, out.recompute_tokens);
  if (!r.ok()) return r.error();
  return std::nullopt;
}

std::string internal_finish_event(const InternalFinish& f) {
  Json j;
  j["finish_reason"] = f.finish_reason;
  j["text"] = f.text;
  j["matched_stop"] = f.matched_stop.empty() ? Json(nullptr) : Json(f.matched_stop);
  j["usage"] = internal_usage_json(f.usage);
  return event("finish", j);
}

std::optional<ApiError> parse_internal_tokens(std::string_view data, InternalTokens& out) {
  out = InternalTokens{};
  Json j;
  if (auto e = parse_data(data, j)) return e;
  FieldReader r(j);
  r.get_int32("index", 0, FieldReader::kInt32Max, out.index);
  r.get_int32_list("ids", 0, FieldReader::kInt32Max, std::numeric_limits<size_t>::max(), out.ids);
  r.get_string("text", out.text);
  if (const Json* lps = r.find("logprobs"); lps && r.ok()) {
    if (!lps->is_array() || lps->size() != out.ids.size())
      return ApiError::bad_request("'logprobs' must match 'ids'", "logprobs");
    for (const Json& e : *lps) {
      InternalTokenLogprob lp;
      if (!e.is_object() || !e.contains("logprob") || !e["logprob"].is_number() ||
          !e.contains("top") || !e["top"].is_array())
        return ApiError::bad_request("malformed 'logprobs' entry", "logprobs");
      lp.logprob = e["logprob"].get<float>();
      for (const Json& p : e["top"]) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number())
          return ApiError::bad_request("malformed 'logprobs' top entry", "logprobs");
        lp.top.emplace_back(p[0].get<int32_t>(), p[1].get<float>());
      }
      out.logprobs.push_back(std::move(lp));
    }
  }
  if (!r.ok()) return r.error();
  return std::nullopt;
}

std::optional<ApiError> parse_internal_finish(std::string_view data, InternalFinish& out) {
  out = InternalFinish{};
  Json j;
  if (auto e = parse_data(data, j)) return e;
  FieldReader r(j);
  r.get_string("finish_reason", out.finish_reason);
  r.get_string("text", out.text);
  r.get_string("matched_stop", out.matched_stop);
  if (const Json* u = r.find("usage"); u && r.ok()) {
    if (!u->is_object()) return ApiError::bad_request("'usage' must be an object", "usage");
    FieldReader ur(*u, "usage.");
    ur.get_int32("prompt_tokens", 0, FieldReader::kInt32Max, out.usage.prompt_tokens);
    ur.get_int32("completion_tokens", 0, FieldReader::kInt32Max, out.usage.completion_tokens);
    ur.get_int32("cached_tokens", 0, FieldReader::kInt32Max, out.usage.cached_tokens);
    if (!ur.ok()) return ur.error();
  }
  if (!r.ok()) return r.error();
  return std::nullopt;
}

std::string kv_event_data(const KvEventWire& e) {
  // Hashes are unsigned 64-bit JSON numbers; clients must read them as uint64, not as
  // doubles (see docs/PROTOCOL.md).
  Json j;
  j["seq"] = e.seq;
  j["type"] = e.stored ? "stored" : "removed";
  j["hashes"] = e.hashes;
  return "data: " + dump_json(j) + "\n\n";
}

std::optional<ApiError> parse_kv_event(std::string_view data, KvEventWire& out) {
  out = KvEventWire{};
  Json j;
  if (auto e = parse_data(data, j)) return e;
  auto seq = j.find("seq");
  auto type = j.find("type");
  auto hashes = j.find("hashes");
  if (seq == j.end() || !seq->is_number_unsigned())
    return ApiError::bad_request("'seq' must be an unsigned integer", "seq");
  if (type == j.end() || !type->is_string() || (*type != "stored" && *type != "removed"))
    return ApiError::bad_request("'type' must be \"stored\" or \"removed\"", "type");
  if (hashes == j.end() || !hashes->is_array())
    return ApiError::bad_request("'hashes' must be an array", "hashes");
  out.seq = seq->get<uint64_t>();
  out.stored = *type == "stored";
  for (const Json& h : *hashes) {
    if (!h.is_number_unsigned())
      return ApiError::bad_request("'hashes' must hold unsigned 64-bit integers", "hashes");
    out.hashes.push_back(h.get<uint64_t>());
  }
  return std::nullopt;
}

std::string worker_readiness_json(const WorkerReadiness& r) {
  Json j;
  j["ready"] = r.ready;
  j["boot_id"] = r.boot_id;
  j["pid"] = r.pid;
  j["block_size"] = r.block_size;
  j["max_num_seqs"] = r.max_num_seqs;
  j["model"] = r.model;
  j["model_fingerprint"] = r.model_fingerprint;
  j["max_model_len"] = r.max_model_len;
  j["kv_blocks_total"] = r.kv_blocks_total;
  return dump_json(j);
}

std::string models_list_json(const std::vector<std::string>& names, int64_t created,
                             int32_t max_model_len) {
  Json data = Json::array();
  for (const std::string& name : names) {
    Json m;
    m["id"] = name;
    m["object"] = "model";
    m["created"] = created;
    m["owned_by"] = "switchyard";
    m["max_model_len"] = max_model_len;
    data.push_back(std::move(m));
  }
  Json j;
  j["object"] = "list";
  j["data"] = std::move(data);
  return dump_json(j);
}

}  // namespace sy
