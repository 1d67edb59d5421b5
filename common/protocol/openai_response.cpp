// OpenAI response bodies and stream chunks (see openai.h).
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/protocol/openai.h"

namespace sy {
namespace {

// A float logprob as the shortest decimal that reads back as the same float (-0.25, not
// -0.25000000372529), and OpenAI's -9999.0 for a probability of zero.
double logprob_value(float lp) {
  if (!std::isfinite(lp)) return -9999.0;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf - 1, lp);
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

Json byte_array(const std::string& bytes) {
  Json a = Json::array();
  for (unsigned char c : bytes) a.push_back(static_cast<int>(c));
  return a;
}

Json usage_json(const Usage& u) {
  Json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  return j;
}

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}.
Json completion_logprobs(const std::vector<TokenLogprob>& lps) {
  Json tokens = Json::array(), token_lps = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (const auto& t : lps) {
    tokens.push_back(t.token);
    token_lps.push_back(logprob_value(t.logprob));
    Json top = Json::object();
    for (const auto& c : t.top)
      top[c.token] = logprob_value(c.logprob);  // as OpenAI: one key per distinct text
    tops.push_back(std::move(top));
    offsets.push_back(t.text_offset);
  }
  Json j;
  j["tokens"] = std::move(tokens);
  j["token_logprobs"] = std::move(token_lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offsets);
  return j;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]}.
Json chat_logprobs(const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const auto& t : lps) {
    Json e;
    e["token"] = t.token;
    e["logprob"] = logprob_value(t.logprob);
    e["bytes"] = byte_array(t.bytes);
    Json top = Json::array();
    for (const auto& c : t.top) {
      Json x;
      x["token"] = c.token;
      x["logprob"] = logprob_value(c.logprob);
      x["bytes"] = byte_array(c.bytes);
      top.push_back(std::move(x));
    }
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return Json{{"content", std::move(content)}};
}

Json logprobs_json(ApiKind kind, const std::vector<TokenLogprob>* lps) {
  if (!lps) return nullptr;
  return kind == ApiKind::kChatCompletion ? chat_logprobs(*lps) : completion_logprobs(*lps);
}

Json envelope(const ResponseHeader& h, bool chunk) {
  Json j;
  j["id"] = h.id;
  if (h.kind == ApiKind::kCompletion)
    j["object"] = "text_completion";
  else
    j["object"] = chunk ? "chat.completion.chunk" : "chat.completion";
  j["created"] = h.created;
  j["model"] = h.model;
  return j;
}

Json reason_json(std::string_view finish_reason) {
  return finish_reason.empty() ? Json(nullptr) : Json(std::string(finish_reason));
}

}  // namespace

std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string completion_response(const ResponseHeader& h, std::string_view text,
                                std::string_view finish_reason,
                                const std::vector<TokenLogprob>* logprobs, const Usage& usage) {
  Json j = envelope(h, false);
  Json choice;
  choice["index"] = 0;
  if (h.kind == ApiKind::kCompletion) {
    choice["text"] = std::string(text);
  } else {
    choice["message"] = Json{{"role", "assistant"}, {"content", std::string(text)}};
  }
  choice["logprobs"] = logprobs_json(h.kind, logprobs);
  choice["finish_reason"] = reason_json(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return dump_json(j);
}

std::string role_chunk(const ResponseHeader& h, bool include_usage) {
  Json j = envelope(h, true);
  Json choice;
  choice["index"] = 0;
  choice["delta"] = Json{{"role", "assistant"}, {"content", ""}};
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  j["choices"] = Json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return sse_data(dump_json(j));
}

std::string delta_chunk(const ResponseHeader& h, std::string_view text,
                        const std::vector<TokenLogprob>* logprobs, std::string_view finish_reason,
                        bool include_usage) {
  Json j = envelope(h, true);
  Json choice;
  choice["index"] = 0;
  if (h.kind == ApiKind::kCompletion) {
    choice["text"] = std::string(text);
  } else {
    choice["delta"] = text.empty() && !finish_reason.empty() ? Json::object()
                                                             : Json{{"content", std::string(text)}};
  }
  choice["logprobs"] = logprobs_json(h.kind, logprobs);
  choice["finish_reason"] = reason_json(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return sse_data(dump_json(j));
}

std::string chat_message_response(const ResponseHeader& h, const ChatMessage& message,
                                  std::string_view finish_reason,
                                  const std::vector<TokenLogprob>* logprobs, const Usage& usage) {
  Json m{{"role", "assistant"}};
  const bool calls = !message.tool_calls.empty();
  m["content"] = calls && message.content.empty() ? Json(nullptr) : Json(message.content);
  if (!message.reasoning.empty()) m["reasoning_content"] = message.reasoning;
  if (calls) {
    Json list = Json::array();
    for (const ToolCall& c : message.tool_calls)
      list.push_back({{"id", c.id},
                      {"type", "function"},
                      {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(list);
  }
  Json j = envelope(h, false);
  Json choice;
  choice["index"] = 0;
  choice["message"] = std::move(m);
  choice["logprobs"] = logprobs_json(h.kind, logprobs);
  choice["finish_reason"] = reason_json(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return dump_json(j);
}

std::string chat_event_chunk(const ResponseHeader& h, const ChatEvent* event,
                             const std::vector<TokenLogprob>* logprobs,
                             std::string_view finish_reason, bool include_usage) {
  Json delta = Json::object();
  if (event) {
    switch (event->kind) {
      case ChatEvent::Kind::kReasoning:
        delta["reasoning_content"] = event->text;
        break;
      case ChatEvent::Kind::kContent:
        delta["content"] = event->text;
        break;
      case ChatEvent::Kind::kToolCallStart:
        delta["tool_calls"] = Json::array({{{"index", event->index},
                                            {"id", event->id},
                                            {"type", "function"},
                                            {"function", {{"name", event->text}, {"arguments", ""}}}}});
        break;
      case ChatEvent::Kind::kToolCallArguments:
        delta["tool_calls"] = Json::array(
            {{{"index", event->index}, {"function", {{"arguments", event->text}}}}});
        break;
    }
  }
  Json j = envelope(h, true);
  Json choice;
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = logprobs_json(h.kind, logprobs);
  choice["finish_reason"] = reason_json(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return sse_data(dump_json(j));
}

std::string usage_chunk(const ResponseHeader& h, const Usage& usage) {
  Json j = envelope(h, true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(usage);
  return sse_data(dump_json(j));
}

std::string sse_data(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 8);
  out += "data: ";
  out += json;
  out += "\n\n";
  return out;
}

std::string sse_error(const ApiError& e) {
  return "event: error\ndata: " + api_error_body(e) + "\n\n";
}

}  // namespace sy
