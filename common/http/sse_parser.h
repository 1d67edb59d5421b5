// Incremental parser of a `text/event-stream` body (WHATWG HTML, "Server-sent events",
// section 9.2.6 "Interpreting an event stream"), for clients of an SSE stream: the load
// generator and the gateway's upstream relay. Bytes may arrive split anywhere, including
// between the CR and LF of a CRLF line end.
//
// Bytes are passed through as they came: the spec decodes the stream as UTF-8 first, but
// field names are ASCII, so matching them on bytes is the same, and a caller that needs
// valid text (a JSON parser does) validates the data itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sy::http {

struct SseEvent {
  std::string type = "message";  // the `event:` field, "message" when absent
  std::string data;              // `data:` lines joined by "\n", without a final "\n"
  std::string id;                // the last event id in effect when this event was dispatched
};

enum class SseError {
  kNone,
  kEventTooLarge,  // one event (or one line) held more than max_event_bytes
};

class SseParser {
 public:
  static constexpr size_t kDefaultMaxEventBytes = 1 << 20;

  // `max_event_bytes` bounds what is held for one pending event: its data, type and id
  // plus the line being read. A stream that exceeds it is an error, not a reason to grow.
  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes);

  // Parses `bytes` and appends each event it completes to `events`. Returns false once
  // the parser has failed (error() says why); later calls do nothing and return false.
  bool feed(std::string_view bytes, std::vector<SseEvent>& events);

  // The stream ended. Per the spec a pending, undispatched event is discarded; the return
  // value says whether there was one (fields or a partial line), which a client may treat
  // as a truncated stream.
  bool finish();

  SseError error() const { return error_; }
  // The last `retry:` value in milliseconds, if any was valid.
  std::optional<int64_t> retry_ms() const { return retry_ms_; }
  // The last event id buffer (survives across events, as the spec's "last event ID").
  const std::string& last_event_id() const { return last_event_id_; }
  // Comment lines seen (lines starting with ':'), e.g. keep-alive pings.
  int64_t comments() const { return comments_; }

 private:
  void process_line(std::string_view line, std::vector<SseEvent>& events);
  void dispatch(std::vector<SseEvent>& events);
  size_t pending_bytes() const;
  bool fail(SseError e);

  size_t max_event_bytes_;
  std::string line_;           // a line whose end has not arrived yet
  std::string data_;           // the data buffer, each line followed by "\n"
  std::string event_type_;     // the event type buffer
  std::string id_buffer_;      // the spec's "last event ID buffer"
  std::string last_event_id_;  // copied from id_buffer_ on dispatch
  bool has_fields_ = false;    // a field line arrived since the last dispatch
  bool skip_lf_ = false;       // the previous chunk ended in CR: a leading LF belongs to it
  bool at_start_ = true;       // a UTF-8 BOM is skipped only at the very start
  std::string bom_prefix_;     // the start of a possible BOM split across chunks
  std::optional<int64_t> retry_ms_;
  int64_t comments_ = 0;
  SseError error_ = SseError::kNone;
};

}  // namespace sy::http
