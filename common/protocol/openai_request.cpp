// Parsing and validation of OpenAI request bodies (see openai.h).
#include <algorithm>
#include <limits>

#include "common/protocol/chat_tools.h"
#include "common/protocol/openai.h"

namespace sy {
namespace {

constexpr int32_t kMaxLogprobs = 20;

// `n` and `best_of`: one choice per request.
void read_single_choice(FieldReader& r, const char* key) {
  const Json* v = r.find(key);
  if (!v || !r.ok()) return;
  int64_t n = 0;
  if (!r.get_int(key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), n))
    return;
  if (n != 1)
    r.fail(quote_field(key) + " must be 1: this server returns one choice per request (got " +
               std::to_string(n) + ")",
           key);
}

void reject_if_set(FieldReader& r, const char* key, const char* why) {
  const Json* v = r.find(key);
  if (!v || !r.ok()) return;
  const bool set = v->is_boolean()  ? v->get<bool>()
                   : v->is_string() ? !v->get_ref<const std::string&>().empty()
                                    : true;
  if (set) r.fail(quote_field(key) + " is not supported" + why, key);
}

// Fields both endpoints share.
void read_common(FieldReader& r, OpenAiRequest& out) {
  r.get_string("model", out.model);
  read_single_choice(r, "n");
  read_single_choice(r, "best_of");
  reject_if_set(r, "echo", ": the response holds only the completion");

  read_sampling_fields(r, out.sampling);

  r.get_bool("stream", out.stream);
  if (const Json* so = r.find("stream_options"); so && r.ok()) {
    if (!so->is_object()) {
      r.fail("'stream_options' must be an object, not " + std::string(json_type_phrase(*so)),
             "stream_options");
    } else {
      FieldReader sr(*so, "stream_options.");
      sr.get_bool("include_usage", out.include_usage);
      if (!sr.ok()) r.fail(sr.error()->message, sr.error()->param);
    }
  }
  if (const Json* p = r.find("priority"); p && r.ok()) {
    int32_t prio = 0;
    if (auto e = parse_priority_value(*p, "priority", prio))
      r.fail(e->message, "priority");
    else
      out.priority = prio;
  }
  r.get_string("user", out.user);
}

std::optional<ApiError> finish(FieldReader& r, OpenAiRequest& out) {
  if (!r.ok()) return r.error();
  if (const std::string bad = out.sampling.validate(); !bad.empty())
    return ApiError::bad_request(bad, sampling_error_field(bad));
  return std::nullopt;
}

// A prompt given as token ids: integers in [0, 2^31).
std::optional<ApiError> read_id_prompt(const Json& arr, const std::string& field,
                                       std::vector<int32_t>& ids) {
  ids.clear();
  ids.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    const Json& e = arr[i];
    if (!e.is_number_integer())
      return ApiError::bad_request(quote_field(field + "[" + std::to_string(i) + "]") +
                                       " must be a token id (an integer), not " +
                                       json_type_phrase(e),
                                   "prompt");
    if (e.is_number_unsigned() ? e.get<uint64_t>() > static_cast<uint64_t>(FieldReader::kInt32Max)
                               : e.get<int64_t>() < 0)
      return ApiError::bad_request(
          quote_field(field + "[" + std::to_string(i) + "]") + " is not a valid token id",
          "prompt");
    ids.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> read_prompt(const Json& body, OpenAiRequest& out) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null())
    return ApiError::bad_request("'prompt' is required", "prompt");
  const Json& p = *it;
  if (p.is_string()) {
    out.prompt = p.get<std::string>();
    return std::nullopt;
  }
  if (!p.is_array())
    return ApiError::bad_request("'prompt' must be a string or an array of token ids, not " +
                                     std::string(json_type_phrase(p)),
                                 "prompt");
  if (p.empty()) return ApiError::bad_request("'prompt' must not be empty", "prompt");
  if (p[0].is_number()) {
    out.prompt_is_ids = true;
    return read_id_prompt(p, "prompt", out.prompt_ids);
  }
  // A list of prompts: one is the same as a single prompt; more need `n` choices.
  if (p.size() > 1)
    return ApiError::bad_request("'prompt' holds " + std::to_string(p.size()) +
                                     " prompts; this server takes one prompt per request",
                                 "prompt");
  if (p[0].is_string()) {
    out.prompt = p[0].get<std::string>();
    return std::nullopt;
  }
  if (p[0].is_array()) {
    if (p[0].empty()) return ApiError::bad_request("'prompt' must not be empty", "prompt");
    out.prompt_is_ids = true;
    return read_id_prompt(p[0], "prompt[0]", out.prompt_ids);
  }
  return ApiError::bad_request("'prompt[0]' must be a string or an array of token ids, not " +
                                   std::string(json_type_phrase(p[0])),
                               "prompt");
}

// One chat message, normalized into `out`: content becomes a string (text parts joined
// by "\n") or null.
std::optional<ApiError> read_message(const Json& m, size_t index, Json& out) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object())
    return ApiError::bad_request(
        quote_field(where) + " must be an object, not " + json_type_phrase(m), "messages");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string())
    return ApiError::bad_request(quote_field(where + ".role") + " must be a string", "messages");
  const std::string& r = role->get_ref<const std::string&>();
  if (r != "system" && r != "user" && r != "assistant" && r != "tool")
    return ApiError::bad_request(quote_field(where + ".role") +
                                     " must be one of system, user, assistant, tool (got \"" + r +
                                     "\")",
                                 "messages");
  out = m;
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    // An assistant turn may consist of tool calls only.
    if (r != "assistant")
      return ApiError::bad_request(quote_field(where + ".content") + " is required", "messages");
    out["content"] = nullptr;
  } else if (content->is_array()) {
    std::string text;
    for (size_t j = 0; j < content->size(); ++j) {
      const Json& part = (*content)[j];
      const std::string pw = where + ".content[" + std::to_string(j) + "]";
      if (!part.is_object())
        return ApiError::bad_request(quote_field(pw) + " must be an object", "messages");
      auto type = part.find("type");
      if (type == part.end() || !type->is_string())
        return ApiError::bad_request(quote_field(pw + ".type") + " must be a string", "messages");
      if (type->get_ref<const std::string&>() != "text")
        return ApiError::bad_request(quote_field(pw + ".type") + " \"" + type->get<std::string>() +
                                         "\" is not supported: this model takes text parts only",
                                     "messages");
      auto t = part.find("text");
      if (t == part.end() || !t->is_string())
        return ApiError::bad_request(quote_field(pw + ".text") + " must be a string", "messages");
      if (j > 0) text.push_back('\n');
      text += t->get_ref<const std::string&>();
    }
    out["content"] = std::move(text);
  } else if (!content->is_string()) {
    return ApiError::bad_request(quote_field(where + ".content") +
                                     " must be a string or an array of text parts, not " +
                                     json_type_phrase(*content),
                                 "messages");
  }
  if (auto n = m.find("name"); n != m.end() && !n->is_null() && !n->is_string())
    return ApiError::bad_request(quote_field(where + ".name") + " must be a string", "messages");
  if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null() && !tc->is_array())
    return ApiError::bad_request(quote_field(where + ".tool_calls") + " must be an array",
                                 "messages");
  if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null() && !id->is_string())
    return ApiError::bad_request(quote_field(where + ".tool_call_id") + " must be a string",
                                 "messages");
  return std::nullopt;
}

}  // namespace

void read_sampling_fields(FieldReader& r, SamplingParams& s) {
  r.get_float("temperature", s.temperature);
  r.get_float("top_p", s.top_p);
  if (r.get_int32("top_k", -1, FieldReader::kInt32Max, s.top_k) && s.top_k < 0)
    s.top_k = 0;  // -1: off, as vLLM spells it
  r.get_float("min_p", s.min_p);
  r.get_float("repetition_penalty", s.repetition_penalty);
  r.get_float("presence_penalty", s.presence_penalty);
  r.get_float("frequency_penalty", s.frequency_penalty);
  uint64_t seed = 0;
  if (r.get_u64_wrapping("seed", seed)) s.seed = seed;
  r.get_string_list("stop", s.stop);
  r.get_int32_list("stop_token_ids", 0, FieldReader::kInt32Max, 64, s.stop_token_ids);
  r.get_bool("ignore_eos", s.ignore_eos);
  r.get_bool("skip_special_tokens", s.skip_special_tokens);
}

// validate() messages start with the field's name or say "at most N <field>".
std::string sampling_error_field(const std::string& message) {
  static const char* const kFields[] = {"temperature",
                                        "top_k",
                                        "top_p",
                                        "min_p",
                                        "repetition_penalty",
                                        "presence_penalty",
                                        "frequency_penalty",
                                        "max_tokens",
                                        "stop_token_ids",
                                        "top_logprobs",
                                        "stop"};
  for (const char* f : kFields)
    if (message.rfind(f, 0) == 0 || message.find(std::string(" ") + f) != std::string::npos)
      return f;
  return {};
}

std::optional<ApiError> parse_priority_value(const Json& v, const std::string& field,
                                             int32_t& out) {
  if (v.is_string()) {
    if (auto p = parse_priority_name(v.get<std::string>())) {
      out = *p;
      return std::nullopt;
    }
    return ApiError::bad_request(
        quote_field(field) + " must be an integer or one of interactive, standard, batch", field);
  }
  const std::string range =
      "[" + std::to_string(kPriorityMin) + ", " + std::to_string(kPriorityMax) + "]";
  if (!v.is_number_integer())
    return ApiError::bad_request(quote_field(field) + " must be an integer in " + range +
                                     " or a class name, not " + json_type_phrase(v),
                                 field);
  const bool neg = !v.is_number_unsigned();
  const int64_t x = neg ? v.get<int64_t>()
                        : static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), 1u << 30));
  if (x < kPriorityMin || x > kPriorityMax)
    return ApiError::bad_request(quote_field(field) + " must be in " + range, field);
  out = static_cast<int32_t>(x);
  return std::nullopt;
}

std::optional<ApiError> parse_priority_header(std::string_view value, int32_t& out) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (auto p = parse_priority_name(std::string(value))) {
    out = *p;
    return std::nullopt;
  }
  const bool neg = !value.empty() && value[0] == '-';
  const std::string_view digits = neg ? value.substr(1) : value;
  if (digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return ApiError::bad_request(
        "header 'X-Priority' must be an integer or one of interactive, standard, batch",
        "X-Priority");
  Json v = neg ? Json(-std::stoll(std::string(digits)))
               : Json(static_cast<uint64_t>(std::stoull(std::string(digits))));
  return parse_priority_value(v, "X-Priority", out);
}

std::optional<ApiError> parse_completion_request(std::string_view body, OpenAiRequest& out) {
  out = OpenAiRequest{};
  out.kind = ApiKind::kCompletion;
  Json j;
  if (auto e = parse_json_object(body, j)) return e;
  if (auto e = read_prompt(j, out)) return e;
  FieldReader r(j);
  read_common(r, out);
  reject_if_set(r, "suffix", ": this server does not insert text");
  int32_t max_tokens = 0;
  if (r.get_int32("max_tokens", 1, FieldReader::kInt32Max, max_tokens)) out.max_tokens = max_tokens;
  int32_t logprobs = 0;
  if (r.get_int32("logprobs", 0, kMaxLogprobs, logprobs)) out.sampling.logprobs = logprobs;
  return finish(r, out);
}

std::optional<ApiError> parse_chat_request(std::string_view body, OpenAiRequest& out) {
  out = OpenAiRequest{};
  out.kind = ApiKind::kChatCompletion;
  Json j;
  if (auto e = parse_json_object(body, j)) return e;
  auto msgs = j.find("messages");
  if (msgs == j.end() || msgs->is_null())
    return ApiError::bad_request("'messages' is required", "messages");
  if (!msgs->is_array())
    return ApiError::bad_request(
        "'messages' must be an array, not " + std::string(json_type_phrase(*msgs)), "messages");
  if (msgs->empty()) return ApiError::bad_request("'messages' must not be empty", "messages");
  out.messages = Json::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    Json m;
    if (auto e = read_message((*msgs)[i], i, m)) return e;
    out.messages.push_back(std::move(m));
  }

  FieldReader r(j);
  read_common(r, out);
  int32_t max_tokens = 0;
  if (r.get_int32("max_tokens", 1, FieldReader::kInt32Max, max_tokens)) out.max_tokens = max_tokens;
  // The newer name wins when both are given.
  if (r.get_int32("max_completion_tokens", 1, FieldReader::kInt32Max, max_tokens)) out.max_tokens = max_tokens;
  r.get_bool("logprobs", out.logprobs);
  int32_t top = 0;
  const bool has_top = r.get_int32("top_logprobs", 0, kMaxLogprobs, top);
  if (has_top && !out.logprobs) r.fail("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  out.sampling.logprobs = out.logprobs ? top : -1;
  r.get_bool("add_generation_prompt", out.add_generation_prompt);
  if (const Json* kw = r.find("chat_template_kwargs"); kw && r.ok()) {
    if (!kw->is_object())
      r.fail("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    else
      out.template_kwargs = *kw;
  }
  if (auto e = finish(r, out)) return e;
  if (auto e = read_tool_fields(j, out)) return e;
  return prepare_tool_messages(out.messages);
}

std::optional<ApiError> check_prompt(const std::vector<int32_t>& prompt_ids,
                                     const ModelLimits& limits, OpenAiRequest& req) {
  const char* field = req.kind == ApiKind::kChatCompletion ? "messages" : "prompt";
  if (prompt_ids.empty()) return ApiError::bad_request("the prompt is empty", field);
  for (size_t i = 0; i < prompt_ids.size(); ++i)
    if (prompt_ids[i] < 0 || prompt_ids[i] >= limits.vocab_size)
      return ApiError::bad_request(
          "prompt token id " + std::to_string(prompt_ids[i]) + " (at index " + std::to_string(i) +
              ") is outside the vocabulary [0, " + std::to_string(limits.vocab_size) + ")",
          field);
  for (int32_t id : req.sampling.stop_token_ids)
    if (id >= limits.vocab_size)
      return ApiError::bad_request("stop token id " + std::to_string(id) +
                                       " is outside the vocabulary [0, " +
                                       std::to_string(limits.vocab_size) + ")",
                                   "stop_token_ids");
  const int64_t n = static_cast<int64_t>(prompt_ids.size());
  const int64_t ctx = limits.context_length;
  if (n >= ctx)
    return ApiError::bad_request("the prompt has " + std::to_string(n) +
                                     " tokens; the context holds " + std::to_string(ctx) +
                                     " tokens, which leaves no room to generate",
                                 field, "context_length_exceeded");
  const int64_t room = ctx - n;
  const char* max_field =
      req.kind == ApiKind::kChatCompletion ? "max_completion_tokens" : "max_tokens";
  if (req.max_tokens) {
    if (*req.max_tokens > room)
      return ApiError::bad_request("max_tokens (" + std::to_string(*req.max_tokens) +
                                       ") plus the prompt (" + std::to_string(n) +
                                       " tokens) exceeds the context of " + std::to_string(ctx) +
                                       " tokens",
                                   max_field, "context_length_exceeded");
    req.sampling.max_tokens = *req.max_tokens;
  } else {
    req.sampling.max_tokens =
        static_cast<int32_t>(req.kind == ApiKind::kCompletion ? std::min<int64_t>(16, room) : room);
  }
  return std::nullopt;
}

}  // namespace sy
