#include "common/http/sse_parser.h"

#include <algorithm>
#include <charconv>

namespace sy::http {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

SseParser::SseParser(size_t max_event_bytes) : max_event_bytes_(max_event_bytes) {}

bool SseParser::fail(SseError e) {
  error_ = e;
  line_.clear();
  data_.clear();
  event_type_.clear();
  return false;
}

size_t SseParser::pending_bytes() const {
  return line_.size() + data_.size() + event_type_.size();
}

bool SseParser::feed(std::string_view bytes, std::vector<SseEvent>& events) {
  if (error_ != SseError::kNone) return false;
  if (at_start_) {
    // The spec skips one BOM at the start of the stream; its three bytes may arrive in
    // separate chunks, so hold them until they match or stop matching.
    const size_t take = std::min(bytes.size(), kBom.size() - bom_prefix_.size());
    bom_prefix_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (kBom.substr(0, bom_prefix_.size()) == bom_prefix_) {
      if (bom_prefix_.size() < kBom.size()) return true;  // all of `bytes` was taken
      at_start_ = false;
      bom_prefix_.clear();
    } else {
      at_start_ = false;
      const std::string head = std::move(bom_prefix_);
      bom_prefix_.clear();
      if (!feed(head, events)) return false;
    }
  }

  size_t pos = 0;
  if (skip_lf_ && !bytes.empty()) {
    // The last chunk ended in CR; an LF here completes that CRLF, not a blank line.
    if (bytes[0] == '\n') pos = 1;
    skip_lf_ = false;
  }
  while (pos < bytes.size()) {
    const size_t end = bytes.find_first_of("\r\n", pos);
    const std::string_view piece =
        bytes.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line_.size() + piece.size() + data_.size() + event_type_.size() > max_event_bytes_)
      return fail(SseError::kEventTooLarge);
    if (end == std::string_view::npos) {
      line_.append(piece);  // the rest of this line comes in a later chunk
      return true;
    }
    if (line_.empty()) {
      process_line(piece, events);
    } else {
      line_.append(piece);
      const std::string line = std::move(line_);
      line_.clear();
      process_line(line, events);
    }
    if (pending_bytes() > max_event_bytes_) return fail(SseError::kEventTooLarge);
    pos = end + 1;
    if (bytes[end] == '\r') {
      if (pos < bytes.size()) {
        if (bytes[pos] == '\n') ++pos;
      } else {
        skip_lf_ = true;
      }
    }
  }
  return true;
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& events) {
  if (line.empty()) {
    dispatch(events);
    return;
  }
  if (line[0] == ':') {
    ++comments_;
    return;
  }
  std::string_view name = line;
  std::string_view value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    name = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  has_fields_ = true;
  if (name == "event") {
    event_type_.assign(value);
  } else if (name == "data") {
    data_.append(value);
    data_.push_back('\n');
  } else if (name == "id") {
    // An id containing NUL is ignored, so that it cannot truncate a Last-Event-ID header.
    if (value.find('\0') == std::string_view::npos) id_buffer_.assign(value);
  } else if (name == "retry") {
    int64_t ms = 0;
    if (all_digits(value)) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec == std::errc()) retry_ms_ = ms;
    }
  }
  // Any other field name is ignored, as the spec says.
}

void SseParser::dispatch(std::vector<SseEvent>& events) {
  last_event_id_ = id_buffer_;
  has_fields_ = false;
  if (data_.empty()) {
    // Fields without data (an id or event line alone) dispatch nothing.
    event_type_.clear();
    return;
  }
  data_.pop_back();  // the "\n" after the last data line
  SseEvent ev;
  if (!event_type_.empty()) ev.type = std::move(event_type_);
  ev.data = std::move(data_);
  ev.id = last_event_id_;
  events.push_back(std::move(ev));
  data_.clear();
  event_type_.clear();
}

bool SseParser::finish() {
  const bool pending = has_fields_ || !line_.empty();
  line_.clear();
  data_.clear();
  event_type_.clear();
  has_fields_ = false;
  return pending;
}

}  // namespace sy::http
