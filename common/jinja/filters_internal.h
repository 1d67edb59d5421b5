// Helpers shared by the filter files (filters.cpp, filters_seq.cpp).
#pragma once

#include <string>
#include <string_view>

#include "common/jinja/ast.h"
#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {

// The sequence filters (filters_seq.cpp); find_filter() falls back to it.
FilterFn find_sequence_filter(std::string_view name);

namespace filter_util {

inline std::string text_of(const Value& v) {
  return v.is_string() ? v.str() : to_str(v);
}

inline Value none() {
  return Value::none();
}

inline Value str(const char* s) {
  return Value::string(s);
}

inline Value boolean(bool b) {
  return Value::boolean(b);
}

inline Value integer(int64_t i) {
  return Value::integer(i);
}

inline int64_t int_arg(const Value& v, const char* what) {
  if (!v.is_integral())
    throw TemplateError(std::string(what) + " must be an integer, not " + v.type_name());
  return v.as_int();
}

inline void check_length(size_t bytes, const Interpreter& in) {
  if (bytes > in.limits().max_string_bytes) {
    throw TemplateError("string of " + std::to_string(bytes) + " bytes is longer than the limit");
  }
}

// Jinja's make_attrgetter: an attribute path (or index) with optional lower-casing of
// strings, for sort/unique/min/max with case_sensitive=False.
inline Value sort_key(Interpreter& in, const Value& item, const Value& attribute,
                      bool ignore_case) {
  Value key = item;
  if (!attribute.is_none()) {
    key = attribute.is_integral() ? in.get_item(item, attribute)
                                  : lookup_attribute_path(in, item, text_of(attribute));
  }
  if (ignore_case && key.is_string()) return Value::string(py::lower(key.str()));
  return key;
}

}  // namespace filter_util
}  // namespace sy::jinja
