// An independent check of a JSON value against the tool-schema subset the constraint
// engine supports (tests only): written from the JSON Schema specification, sharing no
// code with common/constrain, so that a mask bug cannot hide behind the same bug here.
// additionalProperties defaults to false, as the engine applies it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sy::testing {

inline size_t utf8_code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// "" when `v` matches `schema`, else where and why it does not.
inline std::string schema_violation(const nlohmann::json& v, const nlohmann::json& schema, const std::string& at = "$") {
  using nlohmann::json;
  if (schema.contains("const") && v != schema["const"]) return at + ": not the const";
  if (schema.contains("enum")) {
    bool found = false;
    for (const json& e : schema["enum"]) found = found || (e == v && e.type() == v.type());
    if (!found) return at + ": not in enum";
  }
  if (schema.contains("type")) {
    auto is = [&](const std::string& t) {
      if (t == "object") return v.is_object();
      if (t == "array") return v.is_array();
      if (t == "string") return v.is_string();
      if (t == "integer") return v.is_number_integer();
      if (t == "number") return v.is_number();
      if (t == "boolean") return v.is_boolean();
      if (t == "null") return v.is_null();
      return false;
    };
    bool ok = false;
    if (schema["type"].is_string()) ok = is(schema["type"].get<std::string>());
    else
      for (const json& t : schema["type"]) ok = ok || is(t.get<std::string>());
    if (!ok) return at + ": wrong type " + std::string(v.type_name());
  }
  if (v.is_object()) {
    const json props = schema.value("properties", json::object());
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!props.contains(it.key())) return at + ": unexpected property " + it.key();
      if (auto e = schema_violation(it.value(), props[it.key()], at + "." + it.key()); !e.empty()) return e;
    }
    for (const json& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return at + ": missing " + r.get<std::string>();
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>()) return at + ": too few items";
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) return at + ": too many items";
    for (size_t i = 0; i < v.size(); ++i)
      if (auto e = schema_violation(v[i], schema["items"], at + "[" + std::to_string(i) + "]"); !e.empty()) return e;
  }
  if (v.is_string()) {
    const size_t n = utf8_code_points(v.get<std::string>());
    if (schema.contains("minLength") && n < schema["minLength"].get<size_t>()) return at + ": too short";
    if (schema.contains("maxLength") && n > schema["maxLength"].get<size_t>()) return at + ": too long";
  }
  return "";
}

}  // namespace sy::testing
