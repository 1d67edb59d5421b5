// Methods of str, list/tuple and dict that templates call (message.content.split('x'),
// d.items(), ...). Mutating list and dict methods are refused as transformers' sandbox
// (Jinja's ImmutableSandboxedEnvironment) refuses them.
#include <algorithm>
#include <unordered_map>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

using Method = Value (*)(Interpreter&, const Value& self, const CallArgs& args);

Value none() {
  return Value::none();
}

std::optional<std::string> opt_string(const Value& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  if (!v.is_string()) throw TemplateError(std::string(what) + " arg must be None or str");
  return v.str();
}

int64_t int_or(const Value& v, int64_t fallback, const char* what) {
  if (v.is_none()) return fallback;
  if (!v.is_integral()) throw TemplateError(std::string(what) + " must be an integer");
  return v.as_int();
}

const std::string& str_arg(const Value& v, const char* method) {
  if (!v.is_string()) {
    throw TemplateError(std::string(method) + "() argument must be str, not " + v.type_name());
  }
  return v.str();
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

// The part of `s` between Python slice bounds (code points), for startswith(x, start, end).
std::string window(const std::string& s, const Value& start, const Value& end) {
  if (start.is_none() && end.is_none()) return s;
  std::u32string u = py::decode(s);
  int64_t n = static_cast<int64_t>(u.size());
  auto clamp = [&](const Value& v, int64_t fallback) {
    int64_t x = int_or(v, fallback, "slice index");
    if (x < 0) x += n;
    return std::clamp<int64_t>(x, 0, n);
  };
  int64_t b = clamp(start, 0), e = clamp(end, n);
  if (e < b) return "";
  return py::encode(
      std::u32string_view(u).substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
}

Value affix_test(const Value& self, const CallArgs& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  auto a = bind_args(name, args,
                     {{prefix ? "prefix" : "suffix", Value()}, {"start", none()}, {"end", none()}});
  std::string s = window(self.str(), a[1], a[2]);
  std::vector<Value> candidates = a[0].is_tuple() ? a[0].as_list().items : std::vector<Value>{a[0]};
  for (const Value& c : candidates) {
    const std::string& x = str_arg(c, name);
    bool hit = prefix ? s.compare(0, x.size(), x) == 0 && s.size() >= x.size()
                      : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
    if (hit) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Value s_startswith(Interpreter&, const Value& self, const CallArgs& a) {
  return affix_test(self, a, true);
}
Value s_endswith(Interpreter&, const Value& self, const CallArgs& a) {
  return affix_test(self, a, false);
}

Value strip_method(const Value& self, const CallArgs& args, const char* name, bool left,
                   bool right) {
  auto a = bind_args(name, args, {{"chars", none()}});
  return Value::string(py::strip(self.str(), opt_string(a[0], name), left, right));
}

Value s_strip(Interpreter&, const Value& self, const CallArgs& a) {
  return strip_method(self, a, "strip", true, true);
}
Value s_lstrip(Interpreter&, const Value& self, const CallArgs& a) {
  return strip_method(self, a, "lstrip", true, false);
}
Value s_rstrip(Interpreter&, const Value& self, const CallArgs& a) {
  return strip_method(self, a, "rstrip", false, true);
}

Value s_split(Interpreter& in, const Value& self, const CallArgs& args) {
  auto a = bind_args("split", args, {{"sep", none()}, {"maxsplit", Value::integer(-1)}});
  auto parts = py::split(self.str(), opt_string(a[0], "split"), int_or(a[1], -1, "maxsplit"));
  in.step(parts.size());
  return string_list(std::move(parts));
}

Value s_rsplit(Interpreter& in, const Value& self, const CallArgs& args) {
  auto a = bind_args("rsplit", args, {{"sep", none()}, {"maxsplit", Value::integer(-1)}});
  auto parts = py::rsplit(self.str(), opt_string(a[0], "rsplit"), int_or(a[1], -1, "maxsplit"));
  in.step(parts.size());
  return string_list(std::move(parts));
}

Value s_splitlines(Interpreter& in, const Value& self, const CallArgs& args) {
  auto a = bind_args("splitlines", args, {{"keepends", Value::boolean(false)}});
  auto parts = py::splitlines(self.str(), a[0].truthy());
  in.step(parts.size());
  return string_list(std::move(parts));
}

#define SY_STRING_TRANSFORM(fn, name, expr)                         \
  Value fn(Interpreter&, const Value& self, const CallArgs& args) { \
    bind_args(name, args, {});                                      \
    return expr;                                                    \
  }

SY_STRING_TRANSFORM(s_upper, "upper", Value::string(py::upper(self.str())))
SY_STRING_TRANSFORM(s_lower, "lower", Value::string(py::lower(self.str())))
SY_STRING_TRANSFORM(s_title, "title", Value::string(py::title(self.str())))
SY_STRING_TRANSFORM(s_capitalize, "capitalize", Value::string(py::capitalize(self.str())))
SY_STRING_TRANSFORM(s_swapcase, "swapcase", Value::string(py::swapcase(self.str())))
SY_STRING_TRANSFORM(s_isupper, "isupper", Value::boolean(py::is_upper(self.str())))
SY_STRING_TRANSFORM(s_islower, "islower", Value::boolean(py::is_lower(self.str())))
SY_STRING_TRANSFORM(s_isdigit, "isdigit", Value::boolean(py::is_digit(self.str())))
SY_STRING_TRANSFORM(s_isalpha, "isalpha", Value::boolean(py::is_alpha(self.str())))
SY_STRING_TRANSFORM(s_isalnum, "isalnum", Value::boolean(py::is_alnum(self.str())))
SY_STRING_TRANSFORM(s_isspace, "isspace", Value::boolean(py::is_space_string(self.str())))

#undef SY_STRING_TRANSFORM

Value s_replace(Interpreter& in, const Value& self, const CallArgs& args) {
  auto a = bind_args("replace", args,
                     {{"old", Value()}, {"new", Value()}, {"count", Value::integer(-1)}});
  return Value::string(py::replace(self.str(), str_arg(a[0], "replace"), str_arg(a[1], "replace"),
                                   int_or(a[2], -1, "count"), in.limits().max_string_bytes));
}

Value find_method_impl(const Value& self, const CallArgs& args, const char* name, bool reverse,
                       bool raise) {
  auto a = bind_args(name, args, {{"sub", Value()}, {"start", none()}, {"end", none()}});
  std::optional<int64_t> start, end;
  if (!a[1].is_none()) start = int_or(a[1], 0, "start");
  if (!a[2].is_none()) end = int_or(a[2], 0, "end");
  int64_t at = py::find(self.str(), str_arg(a[0], name), start, end, reverse);
  if (at < 0 && raise) throw TemplateError("substring not found");
  return Value::integer(at);
}

Value s_find(Interpreter&, const Value& s, const CallArgs& a) {
  return find_method_impl(s, a, "find", false, false);
}
Value s_rfind(Interpreter&, const Value& s, const CallArgs& a) {
  return find_method_impl(s, a, "rfind", true, false);
}
Value s_index(Interpreter&, const Value& s, const CallArgs& a) {
  return find_method_impl(s, a, "index", false, true);
}
Value s_rindex(Interpreter&, const Value& s, const CallArgs& a) {
  return find_method_impl(s, a, "rindex", true, true);
}

Value s_count(Interpreter&, const Value& self, const CallArgs& args) {
  auto a = bind_args("count", args, {{"sub", Value()}});
  return Value::integer(py::count(self.str(), str_arg(a[0], "count")));
}

Value s_join(Interpreter& in, const Value& self, const CallArgs& args) {
  auto a = bind_args("join", args, {{"iterable", Value()}});
  std::vector<Value> items = iterate(a[0]);
  in.step(items.size());
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      throw TemplateError("sequence item " + std::to_string(i) + ": expected str instance, " +
                          items[i].type_name() + " found");
    }
    if (out.size() + self.str().size() + items[i].str().size() > in.limits().max_string_bytes) {
      throw TemplateError("string is longer than the limit");
    }
    if (i > 0) out += self.str();
    out += items[i].str();
  }
  return Value::string(std::move(out));
}

Value affix_remove(const Value& self, const CallArgs& args, bool prefix) {
  const char* name = prefix ? "removeprefix" : "removesuffix";
  auto a = bind_args(name, args, {{prefix ? "prefix" : "suffix", Value()}});
  const std::string& s = self.str();
  const std::string& x = str_arg(a[0], name);
  if (x.size() <= s.size()) {
    if (prefix && s.compare(0, x.size(), x) == 0) return Value::string(s.substr(x.size()));
    if (!prefix && s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::string(s.substr(0, s.size() - x.size()));
    }
  }
  return self;
}

Value s_removeprefix(Interpreter&, const Value& s, const CallArgs& a) {
  return affix_remove(s, a, true);
}
Value s_removesuffix(Interpreter&, const Value& s, const CallArgs& a) {
  return affix_remove(s, a, false);
}

// str.format with {} / {0} / {name} fields and !s / !r conversions (no format specs).
Value s_format(Interpreter& in, const Value& self, const CallArgs& args) {
  const std::string& f = self.str();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}')
        ++i, out.push_back('}');
      else
        throw TemplateError("Single '}' encountered in format string");
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      ++i;
      out.push_back('{');
      continue;
    }
    size_t close = f.find('}', i);
    if (close == std::string::npos) throw TemplateError("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) throw TemplateError("unsupported format conversion");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) throw TemplateError("format specs are not supported");
    const Value* arg = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) {
        throw TemplateError("Replacement index " + std::to_string(index) + " out of range");
      }
      arg = &args.positional[index];
    } else {
      for (const auto& [k, v] : args.keyword) {
        if (k == field) arg = &v;
      }
      if (arg == nullptr) throw TemplateError("format field '" + field + "' not given");
    }
    out += conversion == 'r' ? to_repr(*arg) : to_str(*arg);
    if (out.size() > in.limits().max_string_bytes)
      throw TemplateError("string is longer than the limit");
  }
  return Value::string(std::move(out));
}

Value s_pad(Interpreter& in, const Value& self, const CallArgs& args, const char* name) {
  auto a = bind_args(name, args, {{"width", Value()}, {"fillchar", Value::string(" ")}});
  int64_t width = int_or(a[0], 0, "width");
  std::string fill = std::string(name) == "zfill" ? "0" : str_arg(a[1], name);
  if (py::length(fill) != 1)
    throw TemplateError("The fill character must be exactly one character long");
  int64_t len = static_cast<int64_t>(py::length(self.str()));
  if (width <= len) return self;
  if (static_cast<size_t>(width) * fill.size() > in.limits().max_string_bytes) {
    throw TemplateError("string is longer than the limit");
  }
  int64_t marg = width - len;
  int64_t left = std::string(name) == "ljust"    ? 0
                 : std::string(name) == "center" ? marg / 2 + (marg & width & 1)
                                                 : marg;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += self.str();
  for (int64_t i = left; i < marg; ++i) out += fill;
  return Value::string(std::move(out));
}

Value s_ljust(Interpreter& in, const Value& s, const CallArgs& a) {
  return s_pad(in, s, a, "ljust");
}
Value s_rjust(Interpreter& in, const Value& s, const CallArgs& a) {
  return s_pad(in, s, a, "rjust");
}
Value s_center(Interpreter& in, const Value& s, const CallArgs& a) {
  return s_pad(in, s, a, "center");
}

Value l_index(Interpreter&, const Value& self, const CallArgs& args) {
  auto a = bind_args("index", args, {{"value", Value()}});
  const auto& items = self.as_list().items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (py_equal(items[i], a[0])) return Value::integer(static_cast<int64_t>(i));
  }
  throw TemplateError(to_repr(a[0]) + " is not in list");
}

Value l_count(Interpreter&, const Value& self, const CallArgs& args) {
  auto a = bind_args("count", args, {{"value", Value()}});
  int64_t n = 0;
  for (const Value& item : self.as_list().items) n += py_equal(item, a[0]) ? 1 : 0;
  return Value::integer(n);
}

Value l_copy(Interpreter&, const Value& self, const CallArgs& args) {
  bind_args("copy", args, {});
  return Value::list(self.as_list().items);
}

Value d_get(Interpreter&, const Value& self, const CallArgs& args) {
  auto a = bind_args("get", args, {{"key", Value()}, {"default", none()}});
  const Value* v = self.as_dict().find(a[0]);
  return v ? *v : a[1];
}

Value d_keys(Interpreter&, const Value& self, const CallArgs& args) {
  bind_args("keys", args, {});
  return Value::list(iterate(self));
}

Value d_values(Interpreter&, const Value& self, const CallArgs& args) {
  bind_args("values", args, {});
  std::vector<Value> out;
  for (const auto& entry : self.as_dict().entries()) out.push_back(entry.second);
  return Value::list(std::move(out));
}

Value d_items(Interpreter&, const Value& self, const CallArgs& args) {
  bind_args("items", args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.as_dict().entries()) out.push_back(Value::tuple({k, v}));
  return Value::list(std::move(out));
}

Value d_copy(Interpreter&, const Value& self, const CallArgs& args) {
  bind_args("copy", args, {});
  return self;
}

const std::unordered_map<std::string_view, Method>& string_methods() {
  static const std::unordered_map<std::string_view, Method> kMethods = {
      {"startswith", s_startswith},
      {"endswith", s_endswith},
      {"strip", s_strip},
      {"lstrip", s_lstrip},
      {"rstrip", s_rstrip},
      {"split", s_split},
      {"rsplit", s_rsplit},
      {"splitlines", s_splitlines},
      {"upper", s_upper},
      {"lower", s_lower},
      {"title", s_title},
      {"capitalize", s_capitalize},
      {"swapcase", s_swapcase},
      {"isupper", s_isupper},
      {"islower", s_islower},
      {"isdigit", s_isdigit},
      {"isalpha", s_isalpha},
      {"isalnum", s_isalnum},
      {"isspace", s_isspace},
      {"replace", s_replace},
      {"find", s_find},
      {"rfind", s_rfind},
      {"index", s_index},
      {"rindex", s_rindex},
      {"count", s_count},
      {"join", s_join},
      {"removeprefix", s_removeprefix},
      {"removesuffix", s_removesuffix},
      {"format", s_format},
      {"ljust", s_ljust},
      {"rjust", s_rjust},
      {"center", s_center},
  };
  return kMethods;
}

const std::unordered_map<std::string_view, Method>& list_methods() {
  static const std::unordered_map<std::string_view, Method> kMethods = {
      {"index", l_index}, {"count", l_count}, {"copy", l_copy}};
  return kMethods;
}

const std::unordered_map<std::string_view, Method>& dict_methods() {
  static const std::unordered_map<std::string_view, Method> kMethods = {
      {"get", d_get}, {"keys", d_keys}, {"values", d_values}, {"items", d_items}, {"copy", d_copy}};
  return kMethods;
}

bool is_mutating(const Value& self, std::string_view name) {
  static constexpr std::string_view kList[] = {"append", "clear",  "extend",  "insert",
                                               "pop",    "remove", "reverse", "sort"};
  static constexpr std::string_view kDict[] = {"clear", "pop", "popitem", "setdefault", "update"};
  if (self.is_list() && !self.is_tuple())
    return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
  if (self.is_dict()) return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  return false;
}

}  // namespace

std::optional<Value> find_method(const Value& self, std::string_view name) {
  const std::unordered_map<std::string_view, Method>* table = nullptr;
  if (self.is_string())
    table = &string_methods();
  else if (self.is_list())
    table = &list_methods();
  else if (self.is_dict())
    table = &dict_methods();
  if (table == nullptr) return std::nullopt;
  auto it = table->find(name);
  if (it == table->end()) {
    if (is_mutating(self, name)) {
      return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                              self.type_name() + "' object is unsafe.");
    }
    return std::nullopt;
  }
  auto fn = std::make_shared<Function>();
  fn->name = self.type_name() + "." + std::string(name);
  Method method = it->second;
  fn->call = [self, method](Interpreter& in, const CallArgs& args) {
    return method(in, self, args);
  };
  return Value::function(std::move(fn));
}

}  // namespace sy::jinja
