#include "bench/loadgen/request_record.h"


namespace sy::bench {

namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone:
      return "none";
    case ErrorKind::kConnect:
      return "connection";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kHttpStatus:
      return "http_status";
    case ErrorKind::kStreamError:
      return "error_event";
    case ErrorKind::kProtocol:
      return "protocol";
    case ErrorKind::kTruncated:
      return "truncated";
    case ErrorKind::kValidation:
      return "validation";
  }
  return "unknown";
}

double RequestRecord::ttft_s() const {
  return arrivals.empty() ? kNaN : seconds(arrivals.front().at - issued);
}

double RequestRecord::e2e_s() const {
  return seconds(done - issued);
}

std::vector<double> RequestRecord::itl_s() const {
  std::vector<double> out;
  if (arrivals.empty()) return out;
  // Tokens that came with the first one arrived no later than it.
  out.assign(static_cast<size_t>(arrivals.front().tokens - 1), 0.0);
  for (size_t i = 1; i < arrivals.size(); ++i) {
    const double gap = seconds(arrivals[i].at - arrivals[i - 1].at);
    const int64_t k = arrivals[i].tokens;
    out.insert(out.end(), static_cast<size_t>(k), gap / static_cast<double>(k));
  }
  return out;
}

double RequestRecord::decode_tok_s() const {
  if (arrivals.size() < 2 || completion_tokens < 2) return kNaN;
  const double span = seconds(arrivals.back().at - arrivals.front().at);
  return span > 0 ? static_cast<double>(completion_tokens - 1) / span : kNaN;
}

double RequestRecord::e2e_tok_s() const {
  const double e2e = e2e_s();
  return e2e > 0 && completion_tokens >= 0 ? static_cast<double>(completion_tokens) / e2e : kNaN;
}

}  // namespace sy::bench
