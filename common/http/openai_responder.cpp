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
    : ex_(std::move(exchange)), header_(std::move(header)), tokenizer_(tokenizer), stream_(stream), include_usage_(include_usage), logprobs_(logprobs) {}

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
  if (!stream_) {
    for (auto& lp : lps) all_logprobs_.push_back(std::move(lp));
    return;
  }
  ex_->write(delta_chunk(header_, text, logprobs_ ? &lps : nullptr, "", include_usage_));
}

void OpenAiResponder::finish(std::string_view finish_reason, std::string_view text, const Usage& usage) {
  if (done_) return;
  done_ = true;
  text_ += text;
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
