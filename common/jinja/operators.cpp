#include "common/jinja/operators.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

const char* op_text(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::kAdd:
      return "+";
    case ast::BinaryOp::kSub:
      return "-";
    case ast::BinaryOp::kMul:
      return "*";
    case ast::BinaryOp::kDiv:
      return "/";
    case ast::BinaryOp::kFloorDiv:
      return "//";
    case ast::BinaryOp::kMod:
      return "%";
    case ast::BinaryOp::kPow:
      return "** or pow()";
    default:
      return "?";
  }
}

[[noreturn]] void unsupported(ast::BinaryOp op, const Value& a, const Value& b) {
  throw TemplateError(std::string("unsupported operand type(s) for ") + op_text(op) + ": '" +
                      a.type_name() + "' and '" + b.type_name() + "'");
}

[[noreturn]] void overflow() {
  throw TemplateError("integer result is too large");
}

void check_size(size_t bytes, size_t max_bytes) {
  if (bytes > max_bytes) {
    throw TemplateError("result of " + std::to_string(bytes) +
                        " bytes is longer than the limit of " + std::to_string(max_bytes));
  }
}

Value repeat(const Value& seq, int64_t n, size_t max_bytes) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && static_cast<uint64_t>(n) > max_bytes / s.size())
      check_size(max_bytes + 1, max_bytes);
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const List& list = seq.as_list();
  size_t elem = sizeof(Value);
  if (!list.items.empty() && static_cast<uint64_t>(n) > max_bytes / (elem * list.items.size())) {
    check_size(max_bytes + 1, max_bytes);
  }
  std::vector<Value> out;
  out.reserve(list.items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), list.items.begin(), list.items.end());
  return list.is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// Python's float floor division and modulo (the divmod of floatobject.c).
void float_divmod(double vx, double wx, double* floordiv, double* mod) {
  if (wx == 0.0) throw TemplateError("float division by zero");
  double m = std::fmod(vx, wx);
  double div = (vx - m) / wx;
  if (m != 0.0) {
    if ((wx < 0) != (m < 0)) {
      m += wx;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, wx);
  }
  double fd;
  if (div != 0.0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, vx / wx);
  }
  *floordiv = fd;
  *mod = m;
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
  }
  return Value::integer(result);
}

}  // namespace

void raise_undefined(const Value& v) {
  throw TemplateError(v.undefined_hint());
}

Value binary_op(ast::BinaryOp op, const Value& a, const Value& b, size_t max_bytes) {
  if (a.is_undefined()) raise_undefined(a);
  // str % x formats x with str(), where an undefined prints as "".
  if (op == ast::BinaryOp::kMod && a.is_string()) return Value::string(percent_format(a.str(), b));
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) {
    bool as_float = a.is_float() || b.is_float();
    double x = a.as_double(), y = b.as_double();
    int64_t i = as_float ? 0 : a.as_int(), j = as_float ? 0 : b.as_int();
    int64_t r;
    switch (op) {
      case ast::BinaryOp::kAdd:
        if (as_float) return Value::number(x + y);
        if (__builtin_add_overflow(i, j, &r)) overflow();
        return Value::integer(r);
      case ast::BinaryOp::kSub:
        if (as_float) return Value::number(x - y);
        if (__builtin_sub_overflow(i, j, &r)) overflow();
        return Value::integer(r);
      case ast::BinaryOp::kMul:
        if (as_float) return Value::number(x * y);
        if (__builtin_mul_overflow(i, j, &r)) overflow();
        return Value::integer(r);
      case ast::BinaryOp::kDiv:
        if (y == 0.0) throw TemplateError("division by zero");
        return Value::number(x / y);
      case ast::BinaryOp::kFloorDiv:
      case ast::BinaryOp::kMod: {
        bool want_div = op == ast::BinaryOp::kFloorDiv;
        if (as_float) {
          double fd, m;
          float_divmod(x, y, &fd, &m);
          return Value::number(want_div ? fd : m);
        }
        if (j == 0) throw TemplateError("integer division or modulo by zero");
        if (i == std::numeric_limits<int64_t>::min() && j == -1) {
          if (want_div) overflow();
          return Value::integer(0);
        }
        int64_t q = i / j, m = i % j;
        if (m != 0 && ((m < 0) != (j < 0))) {
          q -= 1;
          m += j;
        }
        return Value::integer(want_div ? q : m);
      }
      case ast::BinaryOp::kPow:
        if (!as_float && j >= 0) return int_pow(i, j);
        if (x == 0.0 && y < 0) throw TemplateError("0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y)) {
          throw TemplateError("a negative number raised to a fractional power is complex");
        }
        return Value::number(std::pow(x, y));
      default:
        break;
    }
  }
  switch (op) {
    case ast::BinaryOp::kAdd:
      if (a.is_string() && b.is_string()) {
        check_size(a.str().size() + b.str().size(), max_bytes);
        return Value::string(a.str() + b.str());
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> items = a.as_list().items;
        check_size((items.size() + b.as_list().items.size()) * sizeof(Value), max_bytes);
        items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
        return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      if (a.is_string() || a.is_list()) {
        throw TemplateError("can only concatenate " + a.type_name() + " (not \"" + b.type_name() +
                            "\") to " + a.type_name());
      }
      unsupported(op, a, b);
    case ast::BinaryOp::kMul:
      if ((a.is_string() || a.is_list()) && b.is_integral())
        return repeat(a, b.as_int(), max_bytes);
      if ((b.is_string() || b.is_list()) && a.is_integral())
        return repeat(b, a.as_int(), max_bytes);
      if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
        throw TemplateError("can't multiply sequence by non-int of type '" +
                            (a.is_string() || a.is_list() ? b : a).type_name() + "'");
      }
      unsupported(op, a, b);
    default:
      unsupported(op, a, b);
  }
}

Value negate(const Value& v) {
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_float()) return Value::number(-v.as_double());
  if (v.is_integral()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) overflow();
    return Value::integer(-v.as_int());
  }
  throw TemplateError("bad operand type for unary -: '" + v.type_name() + "'");
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) raise_undefined(v);
  if (v.is_float()) return v;
  if (v.is_integral()) return Value::integer(v.as_int());
  throw TemplateError("bad operand type for unary +: '" + v.type_name() + "'");
}

int py_order(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
    }
    double x = a.as_double(), y = b.as_double();
    if (std::isnan(x) || std::isnan(y)) return 2;  // unordered: every comparison is false
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    AllocationBudget::charge(std::min(x.size(), y.size()) * sizeof(Value));  // work, see py_equal
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_order(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  throw TemplateError(std::string("'") + op + "' not supported between instances of '" +
                      a.type_name() + "' and '" + b.type_name() + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw TemplateError("'in <string>' requires string as left operand, not " +
                            item.type_name());
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list().items) {
        if (py_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      // Jinja's Undefined is hashable and never a key.
      return !item.is_undefined() && container.as_dict().find(item) != nullptr;
    default:
      throw TemplateError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

bool compare(ast::CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case ast::CompareOp::kEq:
      return py_equal(a, b);
    case ast::CompareOp::kNe:
      return !py_equal(a, b);
    case ast::CompareOp::kIn:
      return contains(b, a);
    case ast::CompareOp::kNotIn:
      return !contains(b, a);
    case ast::CompareOp::kLt:
      return py_order(a, b, "<") == -1;
    case ast::CompareOp::kLe: {
      int c = py_order(a, b, "<=");
      return c == -1 || c == 0;
    }
    case ast::CompareOp::kGt:
      return py_order(a, b, ">") == 1;
    case ast::CompareOp::kGe: {
      int c = py_order(a, b, ">=");
      return c == 1 || c == 0;
    }
  }
  return false;
}

std::string percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const Dict* mapping = args.is_dict() ? &args.as_dict() : nullptr;
  if (args.is_tuple()) {
    positional = args.as_list().items;
  } else if (mapping == nullptr) {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) throw TemplateError("incomplete format");
    if (fmt[i] == '%') {
      out.push_back('%');
      continue;
    }
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || mapping == nullptr)
        throw TemplateError("format requires a mapping");
      arg = mapping->find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (arg == nullptr) throw TemplateError("format key not found");
      i = close + 1;
    }
    std::string spec = "%";
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos)
      spec += fmt[i++];
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) spec += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      spec += fmt[i++];
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) spec += fmt[i++];
    }
    // Width and precision of at most 3 digits keep every field within the buffers below.
    size_t digit_run = 0, longest_run = 0;
    for (char ch : spec) {
      digit_run = std::isdigit(static_cast<unsigned char>(ch)) ? digit_run + 1 : 0;
      longest_run = std::max(longest_run, digit_run);
    }
    if (longest_run > 3 || i >= fmt.size()) throw TemplateError("unsupported format specifier");
    char conv = fmt[i];
    if (arg == nullptr) {
      if (next >= positional.size()) throw TemplateError("not enough arguments for format string");
      arg = &positional[next++];
    }
    char buf[2048];
    switch (conv) {
      case 's':
      case 'r': {
        std::u32string text = py::decode(conv == 's' ? to_str(*arg) : to_repr(*arg));
        size_t dot = spec.find('.');
        if (dot != std::string::npos) {
          text = text.substr(0, static_cast<size_t>(std::atoi(spec.c_str() + dot + 1)));
        }
        bool left = spec.find('-') != std::string::npos;
        size_t digits = spec.find_first_of("123456789");
        size_t width = digits != std::string::npos && (dot == std::string::npos || digits < dot)
                           ? static_cast<size_t>(std::atoi(spec.c_str() + digits))
                           : 0;
        std::string padding(width > text.size() ? width - text.size() : 0, ' ');
        out += left ? py::encode(text) + padding : padding + py::encode(text);
        break;
      }
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!arg->is_number())
          throw TemplateError("%" + std::string(1, conv) + " format: a number is required");
        if (arg->is_float() && !(std::fabs(arg->as_double()) < 9.2e18)) {
          throw TemplateError("integer result is too large");
        }
        long long n = arg->is_float() ? static_cast<long long>(arg->as_double()) : arg->as_int();
        std::string f = spec + "ll" + (conv == 'i' ? 'd' : conv);
        std::snprintf(buf, sizeof buf, f.c_str(), n);
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        if (!arg->is_number()) throw TemplateError("must be real number, not " + arg->type_name());
        std::string f = spec + conv;
        std::snprintf(buf, sizeof buf, f.c_str(), arg->as_double());
        out += buf;
        break;
      }
      default:
        throw TemplateError(std::string("unsupported format character '") + conv + "'");
    }
  }
  if (mapping == nullptr && next < positional.size()) {
    throw TemplateError("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace sy::jinja
