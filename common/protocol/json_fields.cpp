#include "common/protocol/json_fields.h"

#include <cmath>
#include <limits>

#include "common/utf8.h"

namespace sy {
namespace {

// Records the parser's message when a body does not parse (the DOM parser, run without
// exceptions, only says that it failed).
class ErrorSax : public nlohmann::json_sax<Json> {
 public:
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    message = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." → "parse error at ..."
    if (const size_t p = message.find("] ");
        message.rfind("[json.exception", 0) == 0 && p != std::string::npos)
      message.erase(0, p + 2);
    return false;
  }
};

// True when arrays and objects nest deeper than `limit` (brackets inside strings do
// not count).
bool too_deep(std::string_view s, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

std::optional<ApiError> parse_json_object(std::string_view body, Json& out) {
  if (too_deep(body, kMaxJsonDepth))
    return ApiError::bad_request("request JSON nests deeper than " + std::to_string(kMaxJsonDepth) +
                                 " levels");
  out = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    if (!is_valid_utf8(body)) return ApiError::bad_request("request body is not valid UTF-8");
    ErrorSax sax;
    Json::sax_parse(body.begin(), body.end(), &sax);
    return ApiError::bad_request("malformed JSON in request body: " +
                                 (sax.message.empty() ? "parse error" : sax.message));
  }
  if (!out.is_object()) return ApiError::bad_request("request body must be a JSON object");
  return std::nullopt;
}

std::string quote_field(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back('\'');
  out.append(name);
  out.push_back('\'');
  return out;
}

const char* json_type_phrase(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

void FieldReader::fail(std::string message, const std::string& field) {
  if (!error_) error_ = ApiError::bad_request(std::move(message), field);
}

const Json* FieldReader::find(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool FieldReader::get_bool(const char* key, bool& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  if (!v->is_boolean()) {
    fail(quote_field(name(key)) + " must be a boolean, not " + json_type_phrase(*v), name(key));
    return false;
  }
  out = v->get<bool>();
  return true;
}

bool FieldReader::get_string(const char* key, std::string& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  if (!v->is_string()) {
    fail(quote_field(name(key)) + " must be a string, not " + json_type_phrase(*v), name(key));
    return false;
  }
  out = v->get<std::string>();
  return true;
}

bool FieldReader::get_int(const char* key, int64_t lo, int64_t hi, int64_t& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  const std::string range = " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        static_cast<int64_t>(u) > hi) {
      fail(quote_field(name(key)) + " must be an integer" + range, name(key));
      return false;
    }
    out = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    out = v->get<int64_t>();
  } else {
    fail(quote_field(name(key)) + " must be an integer, not " + json_type_phrase(*v), name(key));
    return false;
  }
  if (out < lo || out > hi) {
    fail(quote_field(name(key)) + " must be an integer" + range + ", got " + std::to_string(out),
         name(key));
    return false;
  }
  return true;
}

bool FieldReader::get_int32(const char* key, int32_t lo, int32_t hi, int32_t& out) {
  int64_t v = 0;
  if (!get_int(key, lo, hi, v)) return false;
  out = static_cast<int32_t>(v);
  return true;
}

bool FieldReader::get_float(const char* key, float& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  if (!v->is_number()) {
    fail(quote_field(name(key)) + " must be a number, not " + json_type_phrase(*v), name(key));
    return false;
  }
  const double d = v->get<double>();
  if (!std::isfinite(d) || std::fabs(d) > 1e30) {
    fail(quote_field(name(key)) + " is out of range", name(key));
    return false;
  }
  out = static_cast<float>(d);
  return true;
}

bool FieldReader::get_u64_wrapping(const char* key, uint64_t& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  if (v->is_number_unsigned())
    out = v->get<uint64_t>();
  else if (v->is_number_integer())
    out = static_cast<uint64_t>(v->get<int64_t>());
  else {
    fail(quote_field(name(key)) + " must be an integer, not " + json_type_phrase(*v), name(key));
    return false;
  }
  return true;
}

bool FieldReader::get_string_list(const char* key, std::vector<std::string>& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  out.clear();
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
    return true;
  }
  if (!v->is_array()) {
    fail(quote_field(name(key)) + " must be a string or an array of strings, not " +
             json_type_phrase(*v),
         name(key));
    return false;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      fail(quote_field(name(key) + "[" + std::to_string(i) + "]") + " must be a string, not " +
               json_type_phrase((*v)[i]),
           name(key));
      return false;
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return true;
}

bool FieldReader::get_int32_list(const char* key, int32_t lo, int32_t hi, size_t max_items,
                                 std::vector<int32_t>& out) {
  const Json* v = find(key);
  if (!v || error_) return false;
  if (!v->is_array()) {
    fail(quote_field(name(key)) + " must be an array of integers, not " + json_type_phrase(*v),
         name(key));
    return false;
  }
  if (v->size() > max_items) {
    fail(quote_field(name(key)) + " has more than " + std::to_string(max_items) + " items",
         name(key));
    return false;
  }
  out.clear();
  out.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& e = (*v)[i];
    int64_t x = 0;
    if (e.is_number_unsigned() && e.get<uint64_t>() <= static_cast<uint64_t>(hi))
      x = static_cast<int64_t>(e.get<uint64_t>());
    else if (e.is_number_integer() && !e.is_number_unsigned())
      x = e.get<int64_t>();
    else if (e.is_number_integer())
      x = static_cast<int64_t>(hi) + 1;  // huge unsigned: out of range below
    else {
      fail(quote_field(name(key) + "[" + std::to_string(i) + "]") + " must be an integer, not " +
               json_type_phrase(e),
           name(key));
      return false;
    }
    if (x < lo || x > hi) {
      fail(quote_field(name(key) + "[" + std::to_string(i) + "]") + " must be in [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]",
           name(key));
      return false;
    }
    out.push_back(static_cast<int32_t>(x));
  }
  return true;
}

}  // namespace sy
