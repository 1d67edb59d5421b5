#include "common/jinja/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/jinja/error.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

void repr_into(std::string& out, const Value& v);

void dict_repr_into(std::string& out, const Dict& d) {
  out.push_back('{');
  bool first = true;
  for (const auto& [k, item] : d.entries()) {
    if (!first) out += ", ";
    AllocationBudget::check_length(out.size());
    first = false;
    repr_into(out, k);
    out += ": ";
    repr_into(out, item);
  }
  out.push_back('}');
}

void repr_into(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      out += "Undefined";
      return;
    case Value::Kind::kString:
      out += py::repr(v.str());
      return;
    case Value::Kind::kList: {
      const List& list = v.as_list();
      out.push_back(list.is_tuple ? '(' : '[');
      for (size_t i = 0; i < list.items.size(); ++i) {
        if (i > 0) out += ", ";
        AllocationBudget::check_length(out.size());
        repr_into(out, list.items[i]);
      }
      if (list.is_tuple && list.items.size() == 1) out.push_back(',');
      out.push_back(list.is_tuple ? ')' : ']');
      return;
    }
    case Value::Kind::kDict:
      dict_repr_into(out, v.as_dict());
      return;
    case Value::Kind::kNamespace:
      out += "<Namespace ";
      dict_repr_into(out, v.as_namespace().attrs);
      out += ">";
      return;
    default:
      out += to_str(v);
      return;
  }
}

// json.dumps' escapes for one byte below 0x80 (and, without ensure_ascii, any other byte).
void json_byte_into(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
  }
}

void json_string_into(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  if (!ensure_ascii || py::is_ascii(s)) {
    for (char ch : s) json_byte_into(out, static_cast<unsigned char>(ch));
  } else {
    char buf[16];
    for (char32_t c : py::decode(s)) {
      if (c < 0x80) {
        json_byte_into(out, static_cast<unsigned char>(c));
      } else if (c >= 0x10000) {
        char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                      static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
        out += buf;
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      }
    }
  }
  out.push_back('"');
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py::float_repr(d);
}

std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::kString:
      return k.str();
    case Value::Kind::kFloat:
      return json_float(k.as_double());
    case Value::Kind::kBool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::kNone:
      return "null";
    case Value::Kind::kInt:
      return std::to_string(k.as_int());
    default:
      throw TemplateError("keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  void write(std::string& out, const Value& v, int level) {
    switch (v.kind()) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat:
        out += json_float(v.as_double());
        return;
      case Value::Kind::kString:
        json_string_into(out, v.str(), o_.ensure_ascii);
        return;
      case Value::Kind::kList: {
        const auto& items = v.as_list().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += item_sep_;
          newline(out, level + 1);
          write(out, items[i], level + 1);
        }
        newline(out, level);
        out.push_back(']');
        return;
      }
      case Value::Kind::kDict: {
        const Dict& d = v.as_dict();
        if (d.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        entries.reserve(d.size());
        for (const auto& [k, item] : d.entries()) entries.emplace_back(json_key(k), &item);
        if (o_.sort_keys) {
          for (const auto& [k, item] : d.entries()) {
            if (!k.is_string()) throw TemplateError("sort_keys needs string keys");
          }
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        out.push_back('{');
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) out += item_sep_;
          newline(out, level + 1);
          json_string_into(out, entries[i].first, o_.ensure_ascii);
          out += o_.key_separator;
          write(out, *entries[i].second, level + 1);
        }
        newline(out, level);
        out.push_back('}');
        return;
      }
      default:
        throw TemplateError("Object of type " + v.type_name() + " is not JSON serializable");
    }
  }

 private:
  void newline(std::string& out, int level) {
    AllocationBudget::check_length(out.size() + (o_.indent ? o_.indent->size() * level : 0));
    if (!o_.indent) return;
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  const JsonOptions& o_;
  std::string item_sep_;
};

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return py::float_repr(v.as_double());
    case Value::Kind::kString:
      return v.str();
    case Value::Kind::kFunction:
      if (v.as_function().is_macro) return "<Macro '" + v.as_function().name + "'>";
      return "<function " + v.as_function().name + ">";
    default: {
      std::string out;
      repr_into(out, v);
      return out;
    }
  }
}

std::string to_repr(const Value& v) {
  std::string out;
  repr_into(out, v);
  return out;
}

std::string to_json_text(const Value& v, const JsonOptions& options) {
  std::string out;
  JsonWriter(options).write(out, v, 0);
  return out;
}

}  // namespace sy::jinja
