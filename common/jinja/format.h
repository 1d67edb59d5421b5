// Text forms of values: str() as {{ }} prints them, repr() as they appear inside printed
// containers, and json.dumps() as transformers' tojson filter writes them.
#pragma once

#include <optional>
#include <string>

#include "common/jinja/value.h"

namespace sy::jinja {

// Python's str(): undefined prints "", none "None", true "True", 1.0 "1.0", a list
// "['a', 1]".
std::string to_str(const Value& v);
// Python's repr().
std::string to_repr(const Value& v);

// json.dumps options, as transformers' tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) passes them.
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // absent: one line
  std::optional<std::string> item_separator;  // default ", " (or "," with an indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json_text(const Value& v, const JsonOptions& options);

}  // namespace sy::jinja
