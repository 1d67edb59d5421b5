// The builtin filters, with Jinja's argument names and defaults. The tojson filter is
// transformers' replacement: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), which does not escape HTML characters.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/filters_internal.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

using namespace filter_util;

Value f_abs(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("abs", args, {});
  if (v.is_float()) return Value::number(std::fabs(v.as_double()));
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) throw TemplateError("integer result is too large");
    return integer(std::llabs(v.as_int()));
  }
  if (v.is_undefined()) raise_undefined(v);
  throw TemplateError("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_attr(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("attr", args, {{"name", Value()}});
  return in.get_attr(v, text_of(a[0]));
}

Value f_capitalize(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("capitalize", args, {});
  return Value::string(py::capitalize(text_of(v)));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("center", args, {{"width", integer(80)}});
  std::string s = text_of(v);
  int64_t width = int_arg(a[0], "width");
  int64_t len = static_cast<int64_t>(py::length(s));
  if (width <= len) return Value::string(s);
  check_length(static_cast<size_t>(width), in);
  int64_t marg = width - len;
  int64_t left = marg / 2 + (marg & width & 1);
  return Value::string(std::string(left, ' ') + s + std::string(marg - left, ' '));
}

Value f_default(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("default", args, {{"default_value", str("")}, {"boolean", boolean(false)}});
  if (v.is_undefined() || (a[1].truthy() && !v.truthy())) return a[0];
  return v;
}

Value f_escape(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("escape", args, {});
  std::string out;
  for (char c : text_of(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value::string(std::move(out));
}

// Python's float(str): surrounding whitespace allowed, underscores between digits, inf/nan.
std::optional<double> parse_float(const std::string& text) {
  std::string s = py::strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty()) return std::nullopt;
  std::string lower = py::lower(clean);
  std::string body = lower[0] == '+' || lower[0] == '-' ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity" || body == "nan") {
    double x = body == "nan" ? NAN : INFINITY;
    return lower[0] == '-' ? -x : x;
  }
  if (body.empty() || body.find_first_not_of("0123456789.e+-") != std::string::npos) {
    return std::nullopt;
  }
  // from_chars, unlike strtod, ignores the process locale's decimal point.
  double d = 0;
  auto res = std::from_chars(body.data(), body.data() + body.size(), d);
  if (res.ptr != body.data() + body.size()) return std::nullopt;
  if (res.ec == std::errc::result_out_of_range)
    d = body.find("e-") != std::string::npos ? 0.0 : INFINITY;
  return lower[0] == '-' ? -d : d;
}

Value f_float(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("float", args, {{"default", Value::number(0.0)}});
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    if (auto d = parse_float(v.str())) return Value::number(*d);
  }
  return a[0];
}

Value f_int(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("int", args, {{"default", integer(0)}, {"base", integer(10)}});
  if (v.is_integral()) return integer(v.as_int());
  if (v.is_float()) {
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d)) throw TemplateError("cannot convert float to integer");
    if (std::fabs(d) >= 9.2e18) throw TemplateError("integer result is too large");
    return integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py::strip(v.str(), std::nullopt, true, true);
    s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
    int64_t base_arg = int_arg(a[1], "base");
    int base = base_arg >= 2 && base_arg <= 36 ? static_cast<int>(base_arg) : 0;
    if (!s.empty() && base >= 2 && base <= 36) {
      size_t i = s[0] == '+' || s[0] == '-' ? 1 : 0;
      if (base == 16 && s.compare(i, 2, "0x") == 0) i += 2;
      try {
        size_t used = 0;
        int64_t n = std::stoll(s.substr(i), &used, base);
        if (used == s.size() - i && used > 0 && std::isalnum(static_cast<unsigned char>(s[i]))) {
          return integer(s[0] == '-' ? -n : n);
        }
      } catch (const std::exception&) {
      }
    }
    // As Jinja: "42.23"|int is 42.
    if (auto d = parse_float(v.str())) {
      if (!std::isnan(*d) && !std::isinf(*d) && std::fabs(*d) < 9.2e18) {
        return integer(static_cast<int64_t>(*d));
      }
    }
  }
  return a[0];
}

Value f_format(Interpreter&, const Value& v, const CallArgs& args) {
  if (!args.keyword.empty() && !args.positional.empty()) {
    throw TemplateError("can't handle positional and keyword arguments at the same time");
  }
  if (!args.keyword.empty()) {
    Dict d;
    for (const auto& [k, item] : args.keyword) d.set(Value::string(k), item);
    return Value::string(percent_format(text_of(v), Value::dict(std::move(d))));
  }
  return Value::string(percent_format(text_of(v), Value::tuple(args.positional)));
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("indent", args,
                     {{"width", integer(4)}, {"first", boolean(false)}, {"blank", boolean(false)}});
  if (a[0].is_integral())
    check_length(static_cast<size_t>(std::max<int64_t>(0, a[0].as_int())), in);
  std::string pad = a[0].is_string()
                        ? a[0].str()
                        : std::string(std::max<int64_t>(0, int_arg(a[0], "width")), ' ');
  std::vector<std::string> lines = py::splitlines(text_of(v) + "\n", false);
  size_t total = 0;
  for (const auto& l : lines) total += l.size() + pad.size() + 1;
  check_length(total, in);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (a[2].truthy() || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  if (a[1].truthy()) out = pad + out;
  return Value::string(std::move(out));
}

Value f_lower(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("lower", args, {});
  return Value::string(py::lower(text_of(v)));
}

Value f_upper(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("upper", args, {});
  return Value::string(py::upper(text_of(v)));
}

Value f_pprint(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("pprint", args, {});
  return Value::string(to_repr(v));
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("replace", args, {{"old", Value()}, {"new", Value()}, {"count", none()}});
  int64_t count = a[2].is_none() ? -1 : int_arg(a[2], "count");
  return Value::string(
      py::replace(text_of(v), text_of(a[0]), text_of(a[1]), count, in.limits().max_string_bytes));
}

Value f_round(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("round", args, {{"precision", integer(0)}, {"method", str("common")}});
  int64_t precision = int_arg(a[0], "precision");
  std::string method = text_of(a[1]);
  if (method != "common" && method != "ceil" && method != "floor") {
    throw TemplateError("method must be common, ceil or floor");
  }
  if (v.is_undefined()) raise_undefined(v);
  if (!v.is_number())
    throw TemplateError("type " + v.type_name() + " doesn't define __round__ method");
  double x = v.as_double();
  if (method != "common") {
    double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::number((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
  }
  if (!v.is_float()) {
    // round(int, n) stays an int; negative n rounds to tens, half to even.
    if (precision >= 0) return integer(v.as_int());
    double rounded = std::nearbyint(x / std::pow(10.0, static_cast<double>(-precision))) *
                     std::pow(10.0, static_cast<double>(-precision));
    if (!(std::fabs(rounded) < 9.2e18)) throw TemplateError("integer result is too large");
    return integer(static_cast<int64_t>(rounded));
  }
  if (std::isnan(x) || std::isinf(x)) return Value::number(x);
  if (precision == 0) return Value::number(std::nearbyint(x));
  if (precision > 0 && precision < 300) {
    // to_chars rounds the exact binary value half to even, as Python's round() does.
    char buf[512];
    auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed,
                             static_cast<int>(precision));
    double rounded = x;
    if (res.ec == std::errc()) std::from_chars(buf, res.ptr, rounded);
    return Value::number(rounded);
  }
  double scale = std::pow(10.0, static_cast<double>(-precision));
  return Value::number(std::nearbyint(x / scale) * scale);
}

Value f_safe(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("safe", args, {});
  return Value::string(text_of(v));
}

Value f_string(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("string", args, {});
  return v.is_string() ? v : Value::string(to_str(v));
}

Value f_title(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("title", args, {});
  // Jinja capitalizes each run that follows whitespace, '-', '(', '{', '[' or '<'.
  std::u32string u = py::decode(text_of(v));
  auto is_break = [](char32_t c) {
    return py::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    size_t j = i;
    bool breaks = is_break(u[i]);
    while (j < u.size() && is_break(u[j]) == breaks) ++j;
    std::string piece = py::encode(std::u32string_view(u).substr(i, j - i));
    if (breaks) {
      out += piece;
    } else {
      std::string first = py::encode(std::u32string_view(u).substr(i, 1));
      out +=
          py::upper(first) + py::lower(py::encode(std::u32string_view(u).substr(i + 1, j - i - 1)));
    }
    i = j;
  }
  return Value::string(std::move(out));
}

Value f_tojson(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("tojson", args,
                     {{"ensure_ascii", boolean(false)},
                      {"indent", none()},
                      {"separators", none()},
                      {"sort_keys", boolean(false)}});
  JsonOptions o;
  o.ensure_ascii = a[0].truthy();
  if (a[1].is_string()) {
    o.indent = a[1].str();
  } else if (a[1].is_integral()) {
    o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(a[1].as_int(), 0, 1024)), ' ');
  } else if (!a[1].is_none()) {
    throw TemplateError("tojson indent must be an int or a str");
  }
  if (!a[2].is_none()) {
    std::vector<Value> seps = iterate(a[2]);
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string()) {
      throw TemplateError("tojson separators must be two strings");
    }
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  o.sort_keys = a[3].truthy();
  return Value::string(to_json_text(v, o));
}

Value f_trim(Interpreter&, const Value& v, const CallArgs& args) {
  auto a = bind_args("trim", args, {{"chars", none()}});
  std::optional<std::string> chars;
  if (!a[0].is_none()) chars = text_of(a[0]);
  return Value::string(py::strip(text_of(v), chars, true, true));
}

Value f_wordcount(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("wordcount", args, {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : py::decode(text_of(v))) {
    bool w = py::is_word_char(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return integer(n);
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"abs", f_abs},         {"attr", f_attr},     {"capitalize", f_capitalize},
      {"center", f_center},   {"d", f_default},     {"default", f_default},
      {"e", f_escape},        {"escape", f_escape}, {"forceescape", f_escape},
      {"float", f_float},     {"format", f_format}, {"indent", f_indent},
      {"int", f_int},         {"lower", f_lower},   {"pprint", f_pprint},
      {"replace", f_replace}, {"round", f_round},   {"safe", f_safe},
      {"string", f_string},   {"title", f_title},   {"tojson", f_tojson},
      {"trim", f_trim},       {"upper", f_upper},   {"wordcount", f_wordcount},
  };
  auto it = kFilters.find(name);
  if (it != kFilters.end()) return it->second;
  return find_sequence_filter(name);
}

}  // namespace sy::jinja
