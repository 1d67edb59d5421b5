#include "common/constrain/json_schema.h"

#include <algorithm>
#include <set>

namespace sy::constrain {
namespace {

using SchemaJson = nlohmann::json;

// Keywords that only annotate; everything else must be understood or refused.
const std::set<std::string> kAnnotations = {"description", "title", "default", "examples", "$schema", "$id",
                                             "$comment", "deprecated", "readOnly", "writeOnly"};

class Compiler {
 public:
  Compiler(SchemaGraph& g, std::string& error) : g_(g), error_(error) {}

  std::optional<int32_t> node(const SchemaJson& s, const std::string& where, int depth) {
    if (!s.is_object()) return fail(where, "a schema must be an object");
    if (depth > kMaxSchemaDepth) return fail(where, "schemas nested deeper than " + std::to_string(kMaxSchemaDepth) + " are not supported");
    for (auto it = s.begin(); it != s.end(); ++it) {
      static const std::set<std::string> known = {"type", "properties", "required", "additionalProperties", "items",
                                                  "minItems", "maxItems", "minLength", "maxLength", "enum", "const"};
      if (!known.count(it.key()) && !kAnnotations.count(it.key()))
        return fail(where, "'" + it.key() + "' is not supported by constrained decoding (tool_choice \"required\" or a named function)");
    }
    if (s.contains("enum") || s.contains("const")) return literals(s, where);
    const auto t = s.find("type");
    if (t == s.end()) return fail(where, "a schema needs a 'type' (or 'enum' / 'const')");
    if (t->is_string()) return typed(s, t->get<std::string>(), where, depth);
    if (!t->is_array() || t->empty()) return fail(where, "'type' must be a string or a non-empty list of strings");
    if (t->size() == 1 && (*t)[0].is_string()) return typed(s, (*t)[0].get<std::string>(), where, depth);
    SchemaNode u;
    u.kind = NodeKind::kUnion;
    std::set<std::string> seen;
    for (const SchemaJson& name : *t) {
      if (!name.is_string()) return fail(where, "'type' must list strings");
      const std::string n = name.get<std::string>();
      if (!seen.insert(n).second) return fail(where, "'type' lists \"" + n + "\" twice");
      if (n == "number" && seen.count("integer")) return fail(where, "'type' [\"integer\", \"number\"] is not supported; use \"number\"");
      if (n == "integer" && seen.count("number")) return fail(where, "'type' [\"number\", \"integer\"] is not supported; use \"number\"");
      auto child = typed(s, n, where, depth);
      if (!child) return std::nullopt;
      u.alternatives.push_back(*child);
    }
    return add(std::move(u));
  }

 private:
  std::optional<int32_t> fail(const std::string& where, const std::string& what) {
    error_ = where + ": " + what;
    return std::nullopt;
  }
  int32_t add(SchemaNode n) {
    g_.nodes.push_back(std::move(n));
    return static_cast<int32_t>(g_.nodes.size() - 1);
  }
  // A count keyword (minItems, maxLength, ...) where it applies; false after fail().
  bool count(const SchemaJson& s, const char* key, const std::string& where, int64_t& out) {
    const auto it = s.find(key);
    if (it == s.end()) return true;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) return fail(where, std::string("'") + key + "' must be a non-negative integer"), false;
    out = it->get<int64_t>();
    return true;
  }
  // Keywords of another type are refused (a string's maxItems would be silently ignored);
  // a list of types takes each type's keywords.
  bool only_for(const SchemaJson& s, const std::string& type, const std::string& where) {
    static const std::vector<std::pair<std::string, std::string>> owner = {
        {"properties", "object"}, {"required", "object"}, {"additionalProperties", "object"}, {"items", "array"},
        {"minItems", "array"},    {"maxItems", "array"},  {"minLength", "string"},           {"maxLength", "string"}};
    for (const auto& [k, t] : owner)
      if (s.contains(k) && t != type && !(s["type"].is_array()))
        return fail(where, "'" + k + "' applies to type \"" + t + "\", not \"" + type + "\""), false;
    return true;
  }

  std::optional<int32_t> typed(const SchemaJson& s, const std::string& type, const std::string& where, int depth) {
    if (!only_for(s, type, where)) return std::nullopt;
    SchemaNode n;
    if (type == "object") return object(s, where, depth);
    if (type == "array") {
      n.kind = NodeKind::kArray;
      const auto items = s.find("items");
      if (items == s.end()) return fail(where, "an array needs 'items' (a schema) for constrained decoding");
      auto child = node(*items, where + ".items", depth + 1);
      if (!child) return std::nullopt;
      n.items = *child;
      if (!count(s, "minItems", where, n.min_count) || !count(s, "maxItems", where, n.max_count)) return std::nullopt;
    } else if (type == "string") {
      n.kind = NodeKind::kString;
      if (!count(s, "minLength", where, n.min_count) || !count(s, "maxLength", where, n.max_count)) return std::nullopt;
    } else if (type == "number") {
      n.kind = NodeKind::kNumber;
    } else if (type == "integer") {
      n.kind = NodeKind::kInteger;
    } else if (type == "boolean") {
      n.kind = NodeKind::kLiterals;
      n.literals = {"false", "true"};
    } else if (type == "null") {
      n.kind = NodeKind::kLiterals;
      n.literals = {"null"};
    } else {
      return fail(where, "type \"" + type + "\" is not a JSON schema type");
    }
    if (n.max_count >= 0 && n.max_count < n.min_count) return fail(where, "the minimum count exceeds the maximum");
    return add(std::move(n));
  }

  std::optional<int32_t> object(const SchemaJson& s, const std::string& where, int depth) {
    SchemaNode n;
    n.kind = NodeKind::kObject;
    if (const auto ap = s.find("additionalProperties"); ap != s.end() && !(ap->is_boolean() && !ap->get<bool>()))
      return fail(where, "'additionalProperties' other than false is not supported by constrained decoding");
    const SchemaJson props = s.value("properties", SchemaJson::object());
    if (!props.is_object()) return fail(where, "'properties' must be an object");
    if (props.size() > static_cast<size_t>(kMaxObjectProperties))
      return fail(where, "objects with more than " + std::to_string(kMaxObjectProperties) + " properties are not supported");
    for (auto it = props.begin(); it != props.end(); ++it) {
      for (unsigned char c : it.key())
        if (c < 0x20 || c == '"' || c == '\\') return fail(where, "property names with quotes, backslashes or control characters are not supported");
      if (it.key().empty()) return fail(where, "empty property names are not supported");
      auto child = node(it.value(), where + ".properties." + it.key(), depth + 1);
      if (!child) return std::nullopt;
      n.properties.push_back({it.key(), *child, false});
    }
    std::sort(n.properties.begin(), n.properties.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    for (const auto& p : n.properties) n.key_names.push_back(p.name);
    if (const auto req = s.find("required"); req != s.end()) {
      if (!req->is_array()) return fail(where, "'required' must be a list of property names");
      for (const SchemaJson& r : *req) {
        if (!r.is_string()) return fail(where, "'required' must be a list of property names");
        auto p = std::find_if(n.properties.begin(), n.properties.end(), [&](const auto& q) { return q.name == r.get<std::string>(); });
        if (p == n.properties.end()) return fail(where, "'required' names \"" + r.get<std::string>() + "\", which is not in 'properties'");
        p->required = true;
        n.required_mask |= uint64_t{1} << (p - n.properties.begin());
      }
    }
    return add(std::move(n));
  }

  std::optional<int32_t> literals(const SchemaJson& s, const std::string& where) {
    if (s.contains("enum") && s.contains("const")) return fail(where, "'enum' and 'const' together are not supported");
    SchemaJson values = s.contains("const") ? SchemaJson::array({s["const"]}) : s["enum"];
    if (!values.is_array() || values.empty()) return fail(where, "'enum' must be a non-empty list");
    SchemaNode n;
    n.kind = NodeKind::kLiterals;
    for (const SchemaJson& v : values) {
      if (v.is_object() || v.is_array()) return fail(where, "'enum' / 'const' values must be strings, numbers, booleans or null");
      if (s.contains("type") && !type_allows(s["type"], v)) return fail(where, "'enum' value " + v.dump() + " does not match 'type'");
      n.literals.push_back(v.dump(-1, ' ', false, SchemaJson::error_handler_t::replace));
    }
    std::sort(n.literals.begin(), n.literals.end());
    n.literals.erase(std::unique(n.literals.begin(), n.literals.end()), n.literals.end());
    return add(std::move(n));
  }

  static bool type_allows(const SchemaJson& type, const SchemaJson& v) {
    auto one = [&](const std::string& t) {
      return (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
             (t == "integer" && v.is_number_integer()) || (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null());
    };
    if (type.is_string()) return one(type.get<std::string>());
    if (type.is_array())
      for (const SchemaJson& t : type)
        if (t.is_string() && one(t.get<std::string>())) return true;
    return false;
  }

  SchemaGraph& g_;
  std::string& error_;
};

}  // namespace

std::optional<int32_t> compile_schema(const nlohmann::json& schema, const std::string& where, SchemaGraph& graph,
                                      std::string& error) {
  return Compiler(graph, error).node(schema, where, 0);
}

}  // namespace sy::constrain
