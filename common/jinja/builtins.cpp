// Argument binding, iteration, attribute paths, the builtin tests and the globals.
#include "common/jinja/builtins.h"

#include <ctime>
#include <unordered_map>

#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {

std::vector<Value> bind_args(const char* function, const CallArgs& args,
                             const std::vector<Param>& params) {
  if (args.positional.size() > params.size()) {
    throw TemplateError(std::string(function) + "() takes at most " +
                        std::to_string(params.size()) + " argument(s) (" +
                        std::to_string(args.positional.size()) + " given)");
  }
  std::vector<Value> out(params.size());
  std::vector<bool> given(params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    out[i] = args.positional[i];
    given[i] = true;
  }
  for (const auto& [name, value] : args.keyword) {
    size_t i = 0;
    while (i < params.size() && name != params[i].name) ++i;
    if (i == params.size()) {
      throw TemplateError(std::string(function) + "() got an unexpected keyword argument '" + name +
                          "'");
    }
    if (given[i]) {
      throw TemplateError(std::string(function) + "() got multiple values for argument '" + name +
                          "'");
    }
    out[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (given[i]) continue;
    if (params[i].fallback.is_undefined()) {
      throw TemplateError(std::string(function) + "() missing required argument '" +
                          params[i].name + "'");
    }
    out[i] = params[i].fallback;
  }
  return out;
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().size());
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      std::u32string u = py::decode(v.str());
      chars.reserve(u.size());
      for (char32_t c : u) {
        std::string one;
        py::append_utf8(one, c);
        chars.push_back(Value::string(std::move(one)));
      }
      return chars;
    }
    default:
      throw TemplateError("'" + v.type_name() + "' object is not iterable");
  }
}

Value lookup_attribute_path(Interpreter& in, const Value& v, std::string_view path) {
  Value current = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string_view part = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
    if (digits && part.size() < 18) {
      current = in.get_item(current, Value::integer(std::stoll(std::string(part))));
    } else {
      current = in.get_item(current, Value::string(std::string(part)));
    }
    if (dot == std::string_view::npos) return current;
    start = dot + 1;
  }
}

// ---- tests ---------------------------------------------------------------------------

namespace {

const Value& arg0(const CallArgs& args, const char* test) {
  if (args.positional.size() != 1 || !args.keyword.empty()) {
    throw TemplateError(std::string("test '") + test + "' takes one argument");
  }
  return args.positional[0];
}

void no_args(const CallArgs& args, const char* test) {
  if (!args.positional.empty() || !args.keyword.empty()) {
    throw TemplateError(std::string("test '") + test + "' takes no arguments");
  }
}

#define SY_SIMPLE_TEST(fn, name, expr)                          \
  bool fn(Interpreter&, const Value& v, const CallArgs& args) { \
    no_args(args, name);                                        \
    return expr;                                                \
  }

SY_SIMPLE_TEST(test_defined, "defined", !v.is_undefined())
SY_SIMPLE_TEST(test_undefined, "undefined", v.is_undefined())
SY_SIMPLE_TEST(test_none, "none", v.is_none())
SY_SIMPLE_TEST(test_boolean, "boolean", v.is_bool())
SY_SIMPLE_TEST(test_true, "true", v.is_bool() && v.as_bool())
SY_SIMPLE_TEST(test_false, "false", v.is_bool() && !v.as_bool())
SY_SIMPLE_TEST(test_integer, "integer", v.is_int())
SY_SIMPLE_TEST(test_float, "float", v.is_float())
SY_SIMPLE_TEST(test_number, "number", v.is_number())
SY_SIMPLE_TEST(test_string, "string", v.is_string())
SY_SIMPLE_TEST(test_mapping, "mapping", v.is_dict())
SY_SIMPLE_TEST(test_iterable, "iterable",
               v.is_undefined() || v.is_list() || v.is_dict() || v.is_string())
SY_SIMPLE_TEST(test_sequence, "sequence",
               v.is_undefined() || v.is_list() || v.is_dict() || v.is_string())
SY_SIMPLE_TEST(test_callable, "callable", v.is_function())
SY_SIMPLE_TEST(test_escaped, "escaped", false)
SY_SIMPLE_TEST(test_lower, "lower", py::is_lower(to_str(v)))
SY_SIMPLE_TEST(test_upper, "upper", py::is_upper(to_str(v)))

#undef SY_SIMPLE_TEST

bool test_even(Interpreter&, const Value& v, const CallArgs& args) {
  no_args(args, "even");
  return py_equal(binary_op(ast::BinaryOp::kMod, v, Value::integer(2), 0), Value::integer(0));
}

bool test_odd(Interpreter&, const Value& v, const CallArgs& args) {
  no_args(args, "odd");
  return py_equal(binary_op(ast::BinaryOp::kMod, v, Value::integer(2), 0), Value::integer(1));
}

bool test_divisibleby(Interpreter&, const Value& v, const CallArgs& args) {
  const Value& n = arg0(args, "divisibleby");
  return py_equal(binary_op(ast::BinaryOp::kMod, v, n, 0), Value::integer(0));
}

bool test_eq(Interpreter&, const Value& v, const CallArgs& a) {
  return py_equal(v, arg0(a, "eq"));
}
bool test_ne(Interpreter&, const Value& v, const CallArgs& a) {
  return !py_equal(v, arg0(a, "ne"));
}
bool test_lt(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(ast::CompareOp::kLt, v, arg0(a, "lt"));
}
bool test_le(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(ast::CompareOp::kLe, v, arg0(a, "le"));
}
bool test_gt(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(ast::CompareOp::kGt, v, arg0(a, "gt"));
}
bool test_ge(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(ast::CompareOp::kGe, v, arg0(a, "ge"));
}
bool test_in(Interpreter&, const Value& v, const CallArgs& a) {
  return contains(arg0(a, "in"), v);
}

bool test_sameas(Interpreter&, const Value& v, const CallArgs& args) {
  const Value& other = arg0(args, "sameas");
  if (v.identity() != nullptr || other.identity() != nullptr)
    return v.identity() == other.identity();
  return v.kind() == other.kind() && py_equal(v, other);
}

bool test_filter(Interpreter&, const Value& v, const CallArgs& args) {
  no_args(args, "filter");
  return v.is_string() && find_filter(v.str()) != nullptr;
}

bool test_test(Interpreter&, const Value& v, const CallArgs& args) {
  no_args(args, "test");
  return v.is_string() && find_test(v.str()) != nullptr;
}

// ---- globals -------------------------------------------------------------------------

Value global_range(Interpreter& in, const CallArgs& args) {
  if (!args.keyword.empty()) throw TemplateError("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3) {
    throw TemplateError("range expected 1 to 3 arguments, got " +
                        std::to_string(args.positional.size()));
  }
  for (const Value& a : args.positional) {
    if (a.is_undefined()) raise_undefined(a);
    if (!a.is_integral()) {
      throw TemplateError("'" + a.type_name() + "' object cannot be interpreted as an integer");
    }
  }
  int64_t start = 0, stop, step = 1;
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  }
  if (step == 0) throw TemplateError("range() arg 3 must not be zero");
  // Length computed in long double so that extreme bounds cannot overflow.
  long double span =
      step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
  long double len =
      span <= 0 ? 0 : (span - 1) / (step > 0 ? step : -static_cast<long double>(step)) + 1;
  if (len > static_cast<long double>(in.limits().max_range)) {
    throw TemplateError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                        std::to_string(in.limits().max_range) + ").");
  }
  std::vector<Value> items;
  auto n = static_cast<int64_t>(len);
  items.reserve(static_cast<size_t>(n));
  // Stepping from start stays between start and stop, so it cannot overflow.
  int64_t value = start;
  for (int64_t i = 0; i < n; ++i) {
    items.push_back(Value::integer(value));
    if (i + 1 < n) value += step;
  }
  in.step(static_cast<uint64_t>(n));
  return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs), as Python's dict() and Namespace() take them.
Dict make_dict(const CallArgs& args, const char* function) {
  if (args.positional.size() > 1) {
    throw TemplateError(std::string(function) + " expected at most 1 positional argument");
  }
  Dict d;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      for (const auto& [k, v] : source.as_dict().entries()) d.set(k, v);
    } else {
      for (const Value& pair : iterate(source)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2)
          throw TemplateError("dictionary update sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
  return d;
}

Value global_dict(Interpreter&, const CallArgs& args) {
  return Value::dict(make_dict(args, "dict"));
}

Value global_namespace(Interpreter& in, const CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  ns->attrs = make_dict(args, "namespace");
  if (ns->attrs.has_namespace())
    throw TemplateError("a namespace attribute cannot hold a namespace");
  in.adopt(ns);
  return Value::namespace_object(std::move(ns));
}

Value global_joiner(Interpreter&, const CallArgs& args) {
  std::vector<Value> a = bind_args("joiner", args, {{"sep", Value::string(", ")}});
  auto used = std::make_shared<bool>(false);
  auto fn = std::make_shared<Function>();
  fn->name = "joiner";
  Value sep = a[0];
  fn->call = [used, sep](Interpreter&, const CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return sep;
  };
  return Value::function(std::move(fn));
}

Value global_raise_exception(Interpreter&, const CallArgs& args) {
  std::vector<Value> a = bind_args("raise_exception", args, {{"message", Value()}});
  throw TemplateError(to_str(a[0]), TemplateError::Kind::kRaised);
}

Value global_strftime_now(Interpreter&, const CallArgs& args) {
  std::vector<Value> a = bind_args("strftime_now", args, {{"format", Value()}});
  if (!a[0].is_string()) throw TemplateError("strftime_now() argument must be str");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::string fmt = a[0].str();
  if (fmt.empty()) return Value::string("");
  std::string buf(fmt.size() * 4 + 64, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &local);
  buf.resize(n);
  return Value::string(std::move(buf));
}

Value make_global(const char* name, Value (*fn)(Interpreter&, const CallArgs&)) {
  auto f = std::make_shared<Function>();
  f->name = name;
  f->call = fn;
  return Value::function(std::move(f));
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"defined", test_defined},
      {"undefined", test_undefined},
      {"none", test_none},
      {"boolean", test_boolean},
      {"true", test_true},
      {"false", test_false},
      {"integer", test_integer},
      {"float", test_float},
      {"number", test_number},
      {"string", test_string},
      {"mapping", test_mapping},
      {"iterable", test_iterable},
      {"sequence", test_sequence},
      {"callable", test_callable},
      {"escaped", test_escaped},
      {"lower", test_lower},
      {"upper", test_upper},
      {"even", test_even},
      {"odd", test_odd},
      {"divisibleby", test_divisibleby},
      {"eq", test_eq},
      {"equalto", test_eq},
      {"==", test_eq},
      {"ne", test_ne},
      {"!=", test_ne},
      {"lt", test_lt},
      {"lessthan", test_lt},
      {"<", test_lt},
      {"le", test_le},
      {"<=", test_le},
      {"gt", test_gt},
      {"greaterthan", test_gt},
      {">", test_gt},
      {"ge", test_ge},
      {">=", test_ge},
      {"in", test_in},
      {"sameas", test_sameas},
      {"filter", test_filter},
      {"test", test_test},
  };
  auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : it->second;
}

const Value* find_global(std::string_view name) {
  static const std::unordered_map<std::string_view, Value> kGlobals = {
      {"range", make_global("range", global_range)},
      {"dict", make_global("dict", global_dict)},
      {"namespace", make_global("namespace", global_namespace)},
      {"joiner", make_global("joiner", global_joiner)},
      {"raise_exception", make_global("raise_exception", global_raise_exception)},
      {"strftime_now", make_global("strftime_now", global_strftime_now)},
  };
  auto it = kGlobals.find(name);
  return it == kGlobals.end() ? nullptr : &it->second;
}

}  // namespace sy::jinja
