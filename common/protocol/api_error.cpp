#include "common/protocol/api_error.h"

#include <nlohmann/json.hpp>

namespace sy {

ApiError ApiError::bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param),
                  std::move(code)};
}

ApiError ApiError::model_not_found(const std::string& model) {
  return ApiError{404, "invalid_request_error", "The model '" + model + "' does not exist", "model",
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
  inner["message"] = e.message;
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
