// libFuzzer target: the request parsers of the OpenAI endpoints and of /internal/generate,
// the priority header, and the stream event parsers, on arbitrary bytes. Each either
// accepts (and what it accepted passes its own validation) or returns a 400 with a
// message; an exception, a crash or a sanitizer report is a bug. The first byte picks
// the parser so that one corpus serves all of them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/protocol/internal_api.h"
#include "common/protocol/openai.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

void check_error(const std::optional<sy::ApiError>& e) {
  if (!e) return;
  check(e->status == 400 && !e->message.empty());
  check(!sy::api_error_body(*e).empty());  // serializes whatever the message quotes
}

void fuzz_openai(std::string_view body, bool chat) {
  sy::OpenAiRequest r;
  const auto e = chat ? sy::parse_chat_request(body, r) : sy::parse_completion_request(body, r);
  check_error(e);
  if (e) return;
  check(r.sampling.validate().empty());
  check(chat ? !r.messages.empty() : (r.prompt_is_ids ? !r.prompt_ids.empty() : true));
  // Through the model checks and the response builders with what was parsed.
  std::vector<int32_t> ids = r.prompt_is_ids ? r.prompt_ids : std::vector<int32_t>{1, 2, 3};
  sy::OpenAiRequest copy = r;
  check_error(sy::check_prompt(ids, sy::ModelLimits{4096, 151680}, copy));
  const sy::ResponseHeader h{r.kind, "id", r.model, 0};
  const std::string text = chat ? r.messages.back()["content"].is_string()
                                      ? r.messages.back()["content"].get<std::string>()
                                      : ""
                                : r.prompt;
  std::vector<sy::TokenLogprob> lps = {{text, text, -1.0f, {{text, text, -2.0f}}, 0}};
  check(!sy::completion_response(h, text, "stop", &lps, sy::Usage{}).empty());
  check(!sy::delta_chunk(h, text, &lps, "", r.include_usage).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0:
      fuzz_openai(body, false);
      break;
    case 1:
      fuzz_openai(body, true);
      break;
    case 2: {
      sy::InternalGenerateRequest r;
      const auto e = sy::parse_internal_generate(body, r);
      check_error(e);
      if (!e) {
        check(!r.prompt_ids.empty() && r.sampling.validate().empty());
        sy::InternalGenerateRequest back;
        check(!sy::parse_internal_generate(sy::internal_generate_body(r), back));  // round-trips
        check(back.prompt_ids == r.prompt_ids && back.resume_ids == r.resume_ids &&
              back.request_id == r.request_id);
      }
      break;
    }
    case 3: {
      int32_t p = 0;
      if (!sy::parse_priority_header(body, p))
        check(p >= sy::kPriorityMin && p <= sy::kPriorityMax);
      break;
    }
    case 4: {
      sy::InternalTokens t;
      sy::InternalFinish f;
      (void)sy::parse_internal_tokens(body, t);
      (void)sy::parse_internal_finish(body, f);
      break;
    }
    case 5: {
      sy::KvEventWire k;
      if (!sy::parse_kv_event(body, k)) {
        sy::KvEventWire back;
        const std::string sse = sy::kv_event_data(k);
        check(!sy::parse_kv_event(std::string_view(sse).substr(6, sse.size() - 8), back));
        check(back.hashes == k.hashes && back.seq == k.seq && back.stored == k.stored);
      }
      break;
    }
  }
  return 0;
}
