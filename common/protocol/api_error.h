// Client-visible errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}
// with the HTTP status that goes with them. Shared by the worker and the gateway, by the
// request parsers (which return them) and by the HTTP layer (which sends them).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sy {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";  // OpenAI's error types
  std::string message;
  std::string param;  // the request field at fault; JSON null when empty
  std::string code;   // a stable machine-readable code; JSON null when empty

  // 400 invalid_request_error naming `param`.
  static ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
  // 404 model_not_found.
  static ApiError model_not_found(const std::string& model);
  // 413 request_too_large.
  static ApiError too_large(std::string message);
  // 429 rate_limit_error: a queue or a rate limit is full; the client may retry.
  static ApiError too_many_requests(std::string message, std::string code = "rate_limited");
  // 500 server_error: a fault of ours, not of the request.
  static ApiError internal(std::string message);
  // 503 server_error: not ready, shutting down, overloaded.
  static ApiError unavailable(std::string message, std::string code = "service_unavailable");
};

// Client text quoted in an error message, cut to `max_bytes` (at a UTF-8 character
// boundary) with "…" appended when cut: a 3 MB model name must not come back 3 MB.
inline constexpr size_t kMaxEchoBytes = 200;
std::string echo_input(std::string_view text, size_t max_bytes = kMaxEchoBytes);

// The JSON body text `{"error": {...}}` (valid UTF-8 even when the message is not). A
// message longer than kMaxErrorMessageBytes is cut (echo_input), whatever quoted it.
inline constexpr size_t kMaxErrorMessageBytes = 1024;
std::string api_error_body(const ApiError& e);

}  // namespace sy
