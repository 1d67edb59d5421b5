// A listener's limits as replicas.yaml writes them (`limits`, LimitsConfig; a worker
// reads the same from its flags, cli::ServeFlags) applied to ServerOptions.
#pragma once

#include "common/config/fleet_config.h"
#include "common/http/server.h"

namespace sy::http {

void apply_limits(const LimitsConfig& limits, ServerOptions& options);

}  // namespace sy::http
