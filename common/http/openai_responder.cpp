#include "common/http/openai_responder.h"

#include "common/utf8.h"

namespace sy::http {
namespace {

// A token's text and raw bytes as the logprobs shapes want them.
void token_strings(const Tokenizer& tok, int32_t id, std::string& text, std::string& bytes) {
  bytes.clear();
  tok.append_token_bytes(id, false, bytes);
  std::string storage;
  text = std::string(valid_utf8_view(bytes, storage));
}

// Call ids unique to the response: "call_" + 16 hex digits of a hash of its id + index.
std::string call_id_prefix(const std::string& response_id) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : response_id) h = (h ^ c) * 1099511628211ull;
  static const char kHex[] = "0123456789abcdef";
  std::string out = "call_";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 0xf]);
  out.push_back('_');
  return out;
}

}  // namespace

std::vector<ResponderToken> responder_tokens(const InternalTokens& t) {
  std::vector<ResponderToken> out(t.ids.size());
  for (size_t k = 0; k < t.ids.size(); ++k) {
    out[k].id = t.ids[k];
    if (k < t.logprobs.size()) {
      out[k].logprob = t.logprobs[k].logprob;
      out[k].top_logprobs = t.logprobs[k].top;
    }
  }
  if (!out.empty()) out.back().text = t.text;
  return out;
}

OpenAiResponder::OpenAiResponder(std::shared_ptr<Exchange> exchange, ResponseHeader header, const Tokenizer& tokenizer, bool stream,
                                 bool include_usage, bool logprobs)
    : ex_(std::move(exchange)), header_(std::move(header)), tokenizer_(tokenizer), stream_(stream), include_usage_(include_usage), logprobs_(logprobs) {
  if (header_.kind == ApiKind::kChatCompletion && header_.output.active()) parser_.emplace(header_.output, call_id_prefix(header_.id));
}

void OpenAiResponder::begin() {
  if (begun_ || !stream_) return;
  begun_ = true;
  ex_->start_stream();
  if (header_.kind == ApiKind::kChatCompletion) ex_->write(role_chunk(header_, include_usage_));
}

TokenLogprob OpenAiResponder::to_logprob(const ResponderToken& t) {
  TokenLogprob lp;
  token_strings(tokenizer_, t.id, lp.token, lp.bytes);
  lp.logprob = t.logprob;
  lp.text_offset = offset_;
  for (const auto& [id, v] : t.top_logprobs) {
    TopLogprob top;
    token_strings(tokenizer_, id, top.token, top.bytes);
    top.logprob = v;
    lp.top.push_back(std::move(top));
  }
  return lp;
}

void OpenAiResponder::tokens(const std::vector<ResponderToken>& tokens) {
  if (done_ || tokens.empty()) return;
  begin();
  std::vector<TokenLogprob> lps;
  std::string text;
  for (const ResponderToken& t : tokens) {
    if (logprobs_) lps.push_back(to_logprob(t));
    text += t.text;
    offset_ += static_cast<int32_t>(t.text.size());
  }
  tokens_sent_ += static_cast<int32_t>(tokens.size());
  text_ += text;
  if (parser_) {
    const std::vector<ChatEvent> events = parser_->feed(text);
    if (!stream_) {
      message_.apply(events);
      for (auto& lp : lps) all_logprobs_.push_back(std::move(lp));
      return;
    }
    return write_events(events, logprobs_ ? &lps : nullptr);
  }
  if (!stream_) {
    for (auto& lp : lps) all_logprobs_.push_back(std::move(lp));
    return;
  }
  ex_->write(delta_chunk(header_, text, logprobs_ ? &lps : nullptr, "", include_usage_));
}

void OpenAiResponder::write_events(const std::vector<ChatEvent>& events, std::vector<TokenLogprob>* lps) {
  if (events.empty()) {
    if (lps && !lps->empty()) ex_->write(chat_event_chunk(header_, nullptr, lps, "", include_usage_));
    return;
  }
  const std::vector<TokenLogprob> none;
  std::string out;
  for (size_t i = 0; i < events.size(); ++i)
    out += chat_event_chunk(header_, &events[i], lps ? (i == 0 ? lps : &none) : nullptr, "", include_usage_);
  ex_->write(std::move(out));
}

void OpenAiResponder::finish(std::string_view finish_reason, std::string_view text, const Usage& usage) {
  if (done_) return;
  done_ = true;
  text_ += text;
  if (parser_) {
    std::vector<ChatEvent> events = parser_->feed(text);
    for (ChatEvent& e : parser_->finish()) events.push_back(std::move(e));
    if (parser_->tool_calls() > 0 && finish_reason == "stop") finish_reason = "tool_calls";
    if (!stream_) {
      message_.apply(events);
      ex_->respond_json(Status::ok, chat_message_response(header_, message_, finish_reason, logprobs_ ? &all_logprobs_ : nullptr, usage));
      return;
    }
    begin();
    write_events(events, nullptr);
    const std::vector<TokenLogprob> none;
    std::string out = chat_event_chunk(header_, nullptr, logprobs_ ? &none : nullptr, finish_reason, include_usage_);
    if (include_usage_) out += usage_chunk(header_, usage);
    out += kSseDone;
    ex_->write(std::move(out));
    ex_->finish();
    return;
  }
  if (!stream_) {
    ex_->respond_json(Status::ok, completion_response(header_, text_, finish_reason, logprobs_ ? &all_logprobs_ : nullptr, usage));
    return;
  }
  begin();
  const std::vector<TokenLogprob> none;
  std::string out = delta_chunk(header_, text, logprobs_ ? &none : nullptr, finish_reason, include_usage_);
  if (include_usage_) out += usage_chunk(header_, usage);
  out += kSseDone;
  ex_->write(std::move(out));
  ex_->finish();
}

void OpenAiResponder::fail(const ApiError& error) {
  if (done_) return;
  done_ = true;
  if (!begun_) {  // nothing sent yet: an ordinary error response
    ex_->respond_error(error);
    return;
  }
  ex_->write(sse_error(error));
  ex_->finish();
}

}  // namespace sy::http
