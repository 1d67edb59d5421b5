// The control API of switchyard-faultproxy (bench/README.md lists the routes):
//   GET /toxics, POST /toxics, DELETE /toxics, DELETE /toxics/ID, POST /reset-all,
//   GET /stats.
// Answers are JSON; errors are {"error": {"message", "type", "param", "code"}} with 400
// (bad JSON or toxic), 404 (unknown path or toxic id) or 405 (method).
#pragma once

#include "bench/faultproxy/control_server.h"
#include "bench/faultproxy/fault_proxy.h"

namespace sy::faultproxy {

// Runs on the proxy's io_context thread.
ControlResponse handle_control(FaultProxy& proxy, const ControlRequest& req);

}  // namespace sy::faultproxy
