#include "common/http/openai_intake.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>

#include "common/protocol/prompt.h"

namespace sy::http {

std::optional<ApiError> read_openai_request(const Exchange& ex, ApiKind kind,
                                            const std::vector<std::string>& served_names,
                                            OpenAiRequest& req, int32_t& priority) {
  const std::string& body = ex.request().body();
  if (auto e = kind == ApiKind::kChatCompletion ? parse_chat_request(body, req)
                                                : parse_completion_request(body, req))
    return e;
  if (!req.model.empty() &&
      std::find(served_names.begin(), served_names.end(), req.model) == served_names.end())
    return ApiError::model_not_found(req.model);
  std::optional<std::string_view> x_priority;
  if (auto h = ex.request().find("X-Priority"); h != ex.request().end())
    x_priority = std::string_view(h->value().data(), h->value().size());
  priority = kPriorityStandard;
  return request_priority(req, x_priority, priority);
}

std::string new_response_id(const char* prefix) {
  static const uint64_t process_part =
      std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix,
                static_cast<unsigned long long>(process_part),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

}  // namespace sy::http
