// libFuzzer target: the gateway's relay of a worker's /internal/generate stream. Arbitrary
// bytes as the worker's SSE body, split at fuzzer-chosen points, go through the SSE
// parser (which must find the same events, errors and state however the bytes are
// split), then, as the relay does, each `tokens`, `finish` or `error` event through the
// internal API parsers into the OpenAI responder on a real exchange. The client's bytes
// must be one well-formed HTTP response: a stream of JSON chunks that ends in [DONE]
// exactly when a finish event arrived and in an error event otherwise, or one JSON body
// (200 with the text, or an error), the text being exactly what the events carried.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "common/http/openai_responder.h"
#include "common/http/sse_parser.h"
#include "common/protocol/internal_api.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/tokenizer.h"
#include "fuzz_connection.h"
#include "policy/clock.h"

namespace {

using namespace sy;
using nlohmann::json;

constexpr size_t kMaxEventBytes = 4096;

// A byte-level tokenizer with the 256 byte tokens, a few merges and one special token,
// enough for logprob entries (token strings, bytes, ids outside the vocabulary).
std::unique_ptr<Tokenizer> tiny_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[std::string(tok::byte_level_char(static_cast<uint8_t>(b)))] = b;
  vocab["ab"] = 256;
  vocab["Ġt"] = 257;
  json j = {{"version", "1.0"},
            {"added_tokens", json::array({{{"id", 258}, {"content", "<|end|>"}, {"special", true}, {"lstrip", false}, {"rstrip", false},
                                           {"normalized", false}, {"single_word", false}}})},
            {"normalizer", nullptr},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"a b", "Ġ t"})}, {"ignore_merges", false}}}};
  const auto path = std::filesystem::temp_directory_path() / ("sy_fuzz_tok_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << j.dump();
  auto t = Tokenizer::from_tokenizer_json(path.string(), json());
  std::filesystem::remove(path);
  return t;
}

// Parses `body` fed in pieces whose sizes come from `seed`.
struct Parsed {
  std::vector<http::SseEvent> events;
  bool ok = true;
  bool pending_at_end = false;
  http::SseError error = http::SseError::kNone;
  std::optional<int64_t> retry_ms;
  int64_t comments = 0;
  std::string last_id;
};

Parsed parse(std::string_view body, uint64_t seed) {
  Parsed p;
  http::SseParser parser(kMaxEventBytes);
  policy::SplitMixRandom rnd(seed);
  while (!body.empty()) {
    const size_t n = seed == 0 ? body.size() : std::min<size_t>(body.size(), 1 + rnd.next() % 9);
    p.ok = parser.feed(body.substr(0, n), p.events) && p.ok;
    body.remove_prefix(n);
  }
  p.pending_at_end = parser.finish();
  p.error = parser.error();
  p.retry_ms = parser.retry_ms();
  p.comments = parser.comments();
  p.last_id = parser.last_event_id();
  return p;
}

bool same(const Parsed& a, const Parsed& b) {
  if (a.events.size() != b.events.size()) return false;
  for (size_t i = 0; i < a.events.size(); ++i)
    if (a.events[i].type != b.events[i].type || a.events[i].data != b.events[i].data || a.events[i].id != b.events[i].id) return false;
  // After a failure the pending state is gone either way; before, it must agree.
  return a.ok == b.ok && a.error == b.error && a.retry_ms == b.retry_ms && a.comments == b.comments && a.last_id == b.last_id &&
         (!a.ok || a.pending_at_end == b.pending_at_end);
}

// What the relay made of the events, to compare with what the client got.
struct Relayed {
  bool finished = false;  // a finish event ended the response cleanly
  std::string text;       // every token text, then the finish text
};

struct Harness {
  fuzz::net::io_context ioc;
  std::unique_ptr<Tokenizer> tokenizer = tiny_tokenizer();
  // Set for each input before the request is sent.
  const std::vector<http::SseEvent>* events = nullptr;
  bool stream = false, chat = false, logprobs = false, include_usage = false;
  Relayed relayed;
  http::HttpServer server{ioc, {}, routes()};

  http::Router routes() {
    http::Router r;
    r.add(fuzz::bhttp::verb::post, "/relay", [this](std::shared_ptr<http::Exchange> ex) { relay(std::move(ex)); });
    return r;
  }

  // As gateway/proxy_request.cpp's handle_event, for one attempt that no retry follows.
  void relay(std::shared_ptr<http::Exchange> ex) {
    const ResponseHeader h{chat ? ApiKind::kChatCompletion : ApiKind::kCompletion, "id-1", "m", 0};
    http::OpenAiResponder responder(ex, h, *tokenizer, stream, include_usage, logprobs);
    int32_t expected_index = 0;
    relayed = {};
    for (const auto& e : *events) {
      if (e.type == "tokens") {
        InternalTokens t;
        if (parse_internal_tokens(e.data, t)) continue;
        if (t.index != expected_index) return responder.fail(ApiError::internal("the worker's token stream was out of order"));
        expected_index += static_cast<int32_t>(t.ids.size());
        auto tokens = http::responder_tokens(t);
        for (const auto& tok : tokens) relayed.text += tok.text;
        responder.tokens(tokens);
      } else if (e.type == "finish") {
        InternalFinish f;
        if (parse_internal_finish(e.data, f)) return responder.fail(ApiError::internal("the worker's finish event was malformed"));
        relayed.text += f.text;
        relayed.finished = true;
        return responder.finish(f.finish_reason, f.text, f.usage);
      } else if (e.type == "error") {
        return responder.fail(ApiError::unavailable("the worker failed the request: " + e.data, "upstream_error"));
      }
    }
    responder.fail(ApiError::unavailable("the worker connection ended before the response was complete", "upstream_error"));
  }
};

// The text of one streamed chunk or one whole body.
std::string text_of(const json& j, bool chat, bool delta) {
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return {};
  const json& c = j["choices"][0];
  if (!chat) return c.value("text", std::string());
  const json& m = delta ? c["delta"] : c["message"];
  return m.is_object() && m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : std::string();
}

void check_stream(const fuzz::bhttp::response<fuzz::bhttp::string_body>& r, const Harness& h, std::string_view out) {
  using fuzz::check;
  http::SseParser client(1 << 24);
  std::vector<http::SseEvent> events;
  check(client.feed(r.body(), events) && !client.finish(), "the client's stream does not parse", out);
  check(!events.empty(), "an empty stream", out);
  std::string text;
  bool done = false, error = false;
  for (const auto& e : events) {
    check(!done && !error, "events after [DONE] or an error event", out);
    if (e.type == "error") {
      error = true;
      check(json::parse(e.data, nullptr, false).contains("error"), "an error event without an error object", out);
      continue;
    }
    if (e.data == "[DONE]") {
      done = true;
      continue;
    }
    const json j = json::parse(e.data, nullptr, false);
    check(j.is_object(), "a chunk that is not JSON", out);
    text += text_of(j, h.chat, true);
  }
  check(done == h.relayed.finished && error == !h.relayed.finished, "the stream's end does not say how the relay ended", out);
  check(text == h.relayed.text, "the streamed text is not the events' text", out);
}

void check_body(const fuzz::bhttp::response<fuzz::bhttp::string_body>& r, const Harness& h, std::string_view out) {
  using fuzz::check;
  const json j = json::parse(r.body(), nullptr, false);
  check(j.is_object(), "a body that is not JSON", out);
  if (h.relayed.finished) {
    check(r.result_int() == 200 && text_of(j, h.chat, false) == h.relayed.text, "a finished response without the events' text", out);
  } else {
    check(r.result_int() >= 400 && j.contains("error"), "a failed response that is not an error", out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness();  // never destroyed
  if (size < 2 || size > 64 * 1024) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  const Parsed whole = parse(body, 0);
  const Parsed split = parse(body, data[1] + 1);
  fuzz::check(same(whole, split), "splitting the stream changed what the SSE parser found", body);

  h->events = &whole.events;
  h->stream = data[0] & 1;
  h->chat = data[0] & 2;
  h->logprobs = data[0] & 4;
  h->include_usage = data[0] & 8;
  const std::string request = "POST /relay HTTP/1.1\r\nHost: f\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  const std::string out = fuzz::run_connection(h->ioc, h->server, request, false);
  const auto responses = fuzz::parse_responses(out, {fuzz::bhttp::verb::post});
  fuzz::check(responses.size() == 1, "not exactly one response", out);
  const auto& r = responses[0];
  const bool streamed = r[fuzz::bhttp::field::content_type] == "text/event-stream";
  if (streamed) {
    fuzz::check(h->stream, "a stream for a request that did not ask for one", out);
    check_stream(r, *h, out);
  } else {
    check_body(r, *h, out);
  }
  return 0;
}
