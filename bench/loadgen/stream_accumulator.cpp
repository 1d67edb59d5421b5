#include "bench/loadgen/stream_accumulator.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/utf8.h"

namespace sy::bench {

namespace {

using nlohmann::json;

// Enough of a bad payload to recognize it in a report, not the whole thing.
std::string excerpt(std::string_view s) {
  constexpr size_t kMax = 200;
  std::string out(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;
}

std::optional<int64_t> int_member(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

const std::string* string_member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return nullptr;
  return it->get_ptr<const std::string*>();
}

// How many tokens one choice of a chunk says it carries, when it says so: token ids
// (servers that return them) or one logprobs entry per token (completions:
// logprobs.tokens; chat: logprobs.content).
std::optional<int64_t> counted_tokens(const json& choice) {
  if (auto it = choice.find("token_ids"); it != choice.end() && it->is_array())
    return static_cast<int64_t>(it->size());
  if (auto lp = choice.find("logprobs"); lp != choice.end() && lp->is_object()) {
    if (auto t = lp->find("tokens"); t != lp->end() && t->is_array())
      return static_cast<int64_t>(t->size());
    if (auto c = lp->find("content"); c != lp->end() && c->is_array())
      return static_cast<int64_t>(c->size());
  }
  return std::nullopt;
}

}  // namespace

void StreamAccumulator::on_event(const http::SseEvent& event, Clock::time_point at) {
  if (!record_.ok()) return;
  if (event.type == "error") {
    record_.fail(ErrorKind::kStreamError, "error event: " + excerpt(event.data));
    return;
  }
  if (event.type != "message") return;  // other event types carry nothing of ours
  if (saw_done_) {
    record_.fail(ErrorKind::kProtocol, "data after [DONE]: " + excerpt(event.data));
    return;
  }
  if (event.data == "[DONE]") {
    saw_done_ = true;
    done_at_ = at;
    return;
  }
  on_chunk(event.data, at);
}

void StreamAccumulator::on_chunk(std::string_view data, Clock::time_point at) {
  const json chunk = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    record_.fail(ErrorKind::kProtocol,
                 std::string(is_valid_utf8(data) ? "chunk is not a JSON object: "
                                                 : "chunk is not valid UTF-8: ") +
                     excerpt(data));
    return;
  }
  if (auto err = chunk.find("error"); err != chunk.end()) {
    const std::string* msg = string_member(*err, "message");
    record_.fail(ErrorKind::kStreamError,
                 "error in stream: " + (msg ? *msg : excerpt(err->dump())));
    return;
  }
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    if (auto v = int_member(*usage, "completion_tokens")) record_.completion_tokens = *v;
    if (auto v = int_member(*usage, "prompt_tokens")) record_.prompt_tokens = *v;
    if (auto d = usage->find("prompt_tokens_details"); d != usage->end())
      if (auto v = int_member(*d, "cached_tokens")) record_.cached_tokens = *v;
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array()) return;

  int64_t tokens = 0;
  for (const json& choice : *choices) {
    if (!choice.is_object()) continue;
    std::string text;
    if (const std::string* t = string_member(choice, "text")) text += *t;  // completions
    if (auto delta = choice.find("delta"); delta != choice.end()) {        // chat
      // Reasoning models stream thinking separately; those are generated tokens too.
      if (const std::string* r = string_member(*delta, "reasoning_content")) text += *r;
      if (const std::string* c = string_member(*delta, "content")) text += *c;
    }
    if (const std::string* f = string_member(choice, "finish_reason")) record_.finish_reason = *f;
    if (auto counted = counted_tokens(choice)) {
      tokens += *counted;
    } else if (!text.empty()) {
      // Without ids or logprobs an event with text is taken as one token; usage tells
      // the true total, and finish() checks the two against each other.
      tokens += 1;
      record_.exact_token_counts = false;
    }
    record_.text += text;
  }
  if (tokens > 0) {
    record_.arrivals.push_back({at, tokens});
    record_.content_events += 1;
    record_.streamed_tokens += tokens;
  }
}

void StreamAccumulator::finish(Clock::time_point at, bool sse_pending) {
  record_.done = saw_done_ ? done_at_ : at;
  if (!record_.ok()) return;
  RequestRecord& r = record_;
  auto invalid = [&](std::string why) { r.fail(ErrorKind::kValidation, std::move(why)); };
  if (!saw_done_) {
    r.fail(ErrorKind::kTruncated,
           sse_pending ? "stream ended mid-event, without [DONE]" : "stream ended without [DONE]");
  } else if (r.completion_tokens < 0) {
    r.fail(ErrorKind::kProtocol,
           "no usage.completion_tokens in the stream (stream_options.include_usage)");
  } else if (r.completion_tokens != r.max_tokens) {
    invalid("completion_tokens " + std::to_string(r.completion_tokens) + ", requested max_tokens " +
            std::to_string(r.max_tokens));
  } else if (r.content_events == 0) {
    invalid("no event carried a token");
  } else if (r.text.empty()) {
    invalid("empty text");
  } else if (!is_valid_utf8(r.text)) {
    invalid("text is not valid UTF-8");
  } else if (r.exact_token_counts && r.streamed_tokens != r.completion_tokens) {
    invalid("events carried " + std::to_string(r.streamed_tokens) + " tokens, usage says " +
            std::to_string(r.completion_tokens));
  } else if (!r.exact_token_counts && r.content_events > r.completion_tokens + 1) {
    // One event a token, plus one: the end of a stream flushes text a server held back
    // (bytes of an incomplete UTF-8 character, a possible stop string or tag start)
    // beside the last token's own event. Seen on the agentic bench: 50 events for 49
    // tokens, reproducibly for one request of a seed.
    invalid(std::to_string(r.content_events) + " token events for " +
            std::to_string(r.completion_tokens) + " tokens");
  } else if (!r.finish_reason.empty() && r.finish_reason != "length") {
    invalid("finish_reason '" + r.finish_reason + "', expected 'length' (ignore_eos)");
  }
}

}  // namespace sy::bench
