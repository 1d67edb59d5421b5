// The first steps of an OpenAI request on a server that runs it (the worker, the
// simulated worker): parse the body for its kind, check the `model` against the served
// names, take the priority from the body or the X-Priority header; and a fresh id for
// its response.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/http/server.h"
#include "common/protocol/api_error.h"
#include "common/protocol/openai.h"

namespace sy::http {

std::optional<ApiError> read_openai_request(const Exchange& ex, ApiKind kind,
                                            const std::vector<std::string>& served_names,
                                            OpenAiRequest& req, int32_t& priority);

// `prefix` ("cmpl-", "chatcmpl-") + a part random per process + a counter: distinct
// across workers, restarts and requests.
std::string new_response_id(const char* prefix);

}  // namespace sy::http
