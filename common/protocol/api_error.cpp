#include "common/protocol/api_error.h"

#include <nlohmann/json.hpp>

namespace sy {

ApiError ApiError::bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param),
                  std::move(code)};
}

std::string echo_input(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes so the cut does not split a character.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "\u2026";
}

ApiError ApiError::model_not_found(const std::string& model) {
  return ApiError{404, "invalid_request_error", "The model '" + echo_input(model) + "' does not exist", "model",
                  "model_not_found"};
}

ApiError ApiError::too_large(std::string message) {
  return ApiError{413, "invalid_request_error", std::move(message), {}, "request_too_large"};
}

ApiError ApiError::too_many_requests(std::string message, std::string code) {
  return ApiError{429, "rate_limit_error", std::move(message), "", std::move(code)};
}

ApiError ApiError::internal(std::string message) {
  return ApiError{500, "server_error", std::move(message), {}, "internal_error"};
}

ApiError ApiError::unavailable(std::string message, std::string code) {
  return ApiError{503, "server_error", std::move(message), {}, std::move(code)};
}

std::string api_error_body(const ApiError& e) {
  nlohmann::ordered_json inner;
  inner["message"] = echo_input(e.message, kMaxErrorMessageBytes);
  inner["type"] = e.type;
  inner["param"] =
      e.param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.param);
  inner["code"] = e.code.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.code);
  nlohmann::ordered_json body;
  body["error"] = std::move(inner);
  // A message may quote client text; replace ill-formed UTF-8 rather than throw.
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace sy
