// A toxic: one fault the proxy injects into the connections it applies to, as given by
// `--toxic JSON` or `POST /toxics`. Parsing never throws; a bad toxic is a 400 naming
// the field at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/protocol/api_error.h"
#include "common/protocol/json_fields.h"

namespace sy::faultproxy {

enum class ToxicType {
  kLatency,    // each chunk waits latency_ms ± jitter_ms (order kept)
  kBandwidth,  // at most rate bytes/s
  kStall,      // stop forwarding after `bytes` / `after_ms`; sockets stay open
  kReset,      // abortive close (RST both ways) at accept, or after `bytes` / `after_ms`
  kBlackhole,  // read and discard, never forward
  kSlowClose,  // the FIN waits delay_ms after the source closed
  kDown,       // close new connections at once; the upstream is never contacted
};

// Bit set: which pipes a toxic acts on. Up: client → upstream; down: upstream → client.
enum Direction : unsigned { kUp = 1, kDown = 2, kBoth = 3 };

struct Toxic {
  ToxicType type = ToxicType::kLatency;
  unsigned direction = kBoth;
  double probability = 1.0;  // per connection, drawn once when the toxic meets it
  int64_t latency_ms = 0;    // latency
  int64_t jitter_ms = 0;     // latency: uniform in [-jitter, +jitter], never below 0 total
  int64_t rate = 0;          // bandwidth, bytes/s
  // stall, reset: counted from when the toxic met the connection, per direction;
  // whichever comes first. Neither: at once (stall) / at accept (reset).
  std::optional<int64_t> bytes;
  std::optional<int64_t> after_ms;
  int64_t delay_ms = 0;  // slow_close

  // Latency, bandwidth and stall also act on connections already open when they are
  // added or deleted; the others are decided at accept and kept for the connection's life.
  bool affects_open_connections() const;
};

const char* toxic_type_name(ToxicType t);

// `obj` (a JSON object) → toxic. Unknown fields, fields of another type, missing or
// out-of-range values are errors.
std::optional<ApiError> parse_toxic(const Json& obj, Toxic& out);

// The toxic's fields as parse_toxic() reads them (with defaults filled in).
Json toxic_to_json(const Toxic& t);

}  // namespace sy::faultproxy
