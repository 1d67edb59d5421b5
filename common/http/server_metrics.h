// Exposes an HttpServer's ServerStats in a MetricsRegistry, for the worker's and the
// gateway's /metrics: open connections, connections refused beyond the limit, requests
// refused (400, 413, 431), timeouts by phase, and streams dropped because their client
// stopped reading. `listener` labels the series ("api", "admin").
#pragma once

#include <string>

#include "common/http/server.h"
#include "common/metrics.h"

namespace sy::http {

void register_server_metrics(MetricsRegistry& registry, const HttpServer& server, const std::string& listener);

}  // namespace sy::http
