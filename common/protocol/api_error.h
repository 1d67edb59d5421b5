// Client-visible errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}
// with the HTTP status that goes with them. Shared by the worker and the gateway, by the
// request parsers (which return them) and by the HTTP layer (which sends them).
#pragma once

#include <string>

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

// The JSON body text `{"error": {...}}` (valid UTF-8 even when the message is not).
std::string api_error_body(const ApiError& e);

}  // namespace sy
