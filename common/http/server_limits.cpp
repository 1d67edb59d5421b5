#include "common/http/server_limits.h"

#include <chrono>

namespace sy::http {
namespace {

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

void apply_limits(const LimitsConfig& l, ServerOptions& o) {
  o.header_limit = l.max_header_bytes;
  o.body_limit = l.max_body_bytes;
  o.max_connections = static_cast<size_t>(l.max_connections);
  o.header_timeout = ms(l.header_timeout_s);
  o.body_timeout = ms(l.body_timeout_s);
  o.idle_timeout = ms(l.idle_timeout_s);
  o.write_timeout = ms(l.write_timeout_s);
  o.max_stream_queue = l.max_stream_buffer_bytes;
  o.send_buffer_bytes = l.socket_send_buffer_bytes;
}

}  // namespace sy::http
