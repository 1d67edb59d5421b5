// Typed access to the fields of a JSON request body, for the request parsers: each read
// either succeeds, finds the field absent (JSON null counts as absent, as OpenAI's API
// treats it), or records a 400 naming the field. Only the first error is kept; later
// reads after an error do nothing. Never throws.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol/api_error.h"

namespace sy {

using Json = nlohmann::ordered_json;  // objects keep the client's key order

// Deepest nesting of arrays and objects a request may have: deeper documents are
// refused before parsing, since copying and destroying them recurses.
inline constexpr int kMaxJsonDepth = 64;

// Parses a request body that must be a JSON object. Errors: malformed JSON (with the
// parser's position), invalid UTF-8, nesting deeper than kMaxJsonDepth, not an object.
std::optional<ApiError> parse_json_object(std::string_view body, Json& out);

class FieldReader {
 public:
  // `obj` must be an object and outlive the reader; `prefix` is prepended to field names
  // in messages ("stream_options.").
  explicit FieldReader(const Json& obj, std::string prefix = {})
      : obj_(obj), prefix_(std::move(prefix)) {}

  bool ok() const { return !error_; }
  const std::optional<ApiError>& error() const { return error_; }
  void fail(std::string message, const std::string& field);

  // The value of `key` when present and not null.
  const Json* find(const char* key) const;
  // Each returns true when the field was present, valid and stored in `out`.
  bool get_bool(const char* key, bool& out);
  bool get_string(const char* key, std::string& out);
  // An integer (not 1.5, not "1") in [lo, hi].
  bool get_int(const char* key, int64_t lo, int64_t hi, int64_t& out);
  bool get_int32(const char* key, int32_t lo, int32_t hi, int32_t& out);
  static constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();  // get_int32's widest bound
  // A finite number, integer or not.
  bool get_float(const char* key, float& out);
  // Any 64-bit integer; negative values are taken modulo 2^64 (a seed).
  bool get_u64_wrapping(const char* key, uint64_t& out);
  // A string, or an array of strings.
  bool get_string_list(const char* key, std::vector<std::string>& out);
  // An array of integers in [lo, hi] (at most max_items).
  bool get_int32_list(const char* key, int32_t lo, int32_t hi, size_t max_items,
                      std::vector<int32_t>& out);

  std::string name(const char* key) const { return prefix_ + key; }

 private:
  const Json& obj_;
  std::string prefix_;
  std::optional<ApiError> error_;
};

// 'name' in single quotes, for messages.
std::string quote_field(std::string_view name);

// JSON type names as the error messages spell them ("a string", "an array", ...).
const char* json_type_phrase(const Json& v);

}  // namespace sy
