#include "common/http/server_metrics.h"

namespace sy::http {

void register_server_metrics(MetricsRegistry& registry, const HttpServer& server, const std::string& listener) {
  // Each reader holds the stats (not the server), so a scrape after the server is gone
  // still reads valid memory.
  const std::shared_ptr<const ServerStats> stats = server.stats();
  auto read = [stats](std::atomic<uint64_t> ServerStats::*field) {
    return [stats, field] { return static_cast<double>(((*stats).*field).load()); };
  };
  const MetricLabels l = {{"listener", listener}};
  registry.gauge_fn("switchyard_http_connections", "Open client connections.", read(&ServerStats::connections_open), l);
  registry.counter_fn("switchyard_http_connections_accepted_total", "Client connections accepted.", read(&ServerStats::connections_accepted), l);
  registry.counter_fn("switchyard_http_connections_refused_total", "Connections answered 503 and closed: max_connections were open.",
                      read(&ServerStats::connections_refused), l);
  const char* refused_help =
      "Requests refused before any handler: malformed (400), body too large (413), headers too large (431), transfer coding not implemented (501).";
  for (auto [status, field] : {std::pair{"400", &ServerStats::rejected_400}, {"413", &ServerStats::rejected_413}, {"431", &ServerStats::rejected_431},
                               {"501", &ServerStats::rejected_501}})
    registry.counter_fn("switchyard_http_requests_refused_total", refused_help, read(field), {{"listener", listener}, {"status", status}});
  const char* timeout_help = "Connections closed by a timeout: headers (slow or unfinished), body, idle keep-alive, a write the client did not read.";
  for (auto [phase, field] : {std::pair{"header", &ServerStats::header_timeouts},
                              {"body", &ServerStats::body_timeouts},
                              {"idle", &ServerStats::idle_timeouts},
                              {"write", &ServerStats::write_timeouts}})
    registry.counter_fn("switchyard_http_timeouts_total", timeout_help, read(field), {{"listener", listener}, {"phase", phase}});
  registry.counter_fn("switchyard_http_streams_dropped_total",
                      "Streamed responses dropped (and their requests cancelled): more output waited for the client than the bound.",
                      read(&ServerStats::streams_dropped), l);
}

}  // namespace sy::http
