// Expression evaluation: names, literals, operators, attribute and item access (Jinja's
// sandboxed getattr/getitem), slices, calls, filters and tests.
#include <optional>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

// Jinja's object_type_repr, as undefined messages name objects.
std::string object_type(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  return v.type_name() + " object";
}

Value no_attribute(const Value& object, std::string_view name) {
  std::string hint = "'";
  hint += object_type(object);
  hint += "' has no attribute '";
  hint += name;
  hint += "'";
  return Value::undefined(std::move(hint));
}

Value no_element(const Value& object, const Value& key) {
  return Value::undefined(object_type(object) + " has no element " + to_repr(key));
}

// Python's index normalisation for x[i]: negative counts from the end.
std::optional<size_t> normalize_index(int64_t i, size_t size) {
  int64_t n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return static_cast<size_t>(i);
}

// A slice bound: none (or absent) is "from the end", an int is a position. Jinja slices
// with Python's own obj[a:b], so a bad bound or object is a TypeError.
std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_none()) return std::nullopt;
  if (!v.is_integral()) {
    throw TemplateError("slice indices must be integers or None or have an __index__ method");
  }
  return v.as_int();
}

// The positions a Python slice selects from a sequence of `size` items.
std::vector<size_t> slice_positions(size_t size, std::optional<int64_t> start,
                                    std::optional<int64_t> stop, std::optional<int64_t> step) {
  int64_t n = static_cast<int64_t>(size);
  int64_t st = step.value_or(1);
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  int64_t e = adjust(stop, st < 0 ? -1 : n);
  std::vector<size_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    out.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, st, &i)) break;
  }
  return out;
}

}  // namespace

Value Interpreter::get_attr(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      raise_undefined(object);
    case Value::Kind::kDict:
      // As Python's getattr, a method wins over a key of the same name (d.items).
      if (auto method = find_method(object, name)) return *method;
      if (const Value* v = object.as_dict().find(name)) return *v;
      return no_attribute(object, name);
    case Value::Kind::kNamespace:
      if (const Value* v = object.as_namespace().attrs.find(name)) return *v;
      return no_attribute(object, name);
    case Value::Kind::kString:
    case Value::Kind::kList:
      if (auto method = find_method(object, name)) return *method;
      return no_attribute(object, name);
    default:
      return no_attribute(object, name);
  }
}

Value Interpreter::get_item(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      raise_undefined(object);
    case Value::Kind::kDict: {
      if (key.is_string() || key.is_number() || key.is_none()) {
        if (const Value* v = object.as_dict().find(key)) return *v;
      }
      break;
    }
    case Value::Kind::kList: {
      if (key.is_integral()) {
        const auto& items = object.as_list().items;
        if (auto i = normalize_index(key.as_int(), items.size())) return items[*i];
        return no_element(object, key);
      }
      break;
    }
    case Value::Kind::kString: {
      if (key.is_integral()) {
        const std::string& s = object.str();
        if (py::is_ascii(s)) {
          if (auto i = normalize_index(key.as_int(), s.size()))
            return Value::string(s.substr(*i, 1));
        } else {
          std::u32string u = py::decode(s);
          if (auto i = normalize_index(key.as_int(), u.size())) {
            return Value::string(py::encode(std::u32string_view(u).substr(*i, 1)));
          }
        }
        return no_element(object, key);
      }
      break;
    }
    default:
      break;
  }
  // Jinja falls back to the attribute for a string key (d['items'] is the method).
  if (key.is_string()) return get_attr(object, key.str());
  return no_element(object, key);
}

Value Interpreter::eval(const ast::Expr& expr, const ScopePtr& scope) {
  DepthGuard guard(this);
  step();
  line_ = expr.line;
  switch (expr.kind) {
    case ast::ExprKind::kLiteral:
      return static_cast<const ast::Literal&>(expr).value;
    case ast::ExprKind::kName: {
      const std::string& name = static_cast<const ast::Name&>(expr).name;
      if (const Value* v = scope->find(name)) return *v;
      if (const Value* g = find_global(name)) return *g;
      return Value::undefined("'" + name + "' is undefined");
    }
    case ast::ExprKind::kList: {
      const auto& node = static_cast<const ast::ListExpr&>(expr);
      std::vector<Value> items;
      items.reserve(node.items.size());
      for (const auto& item : node.items) items.push_back(eval(*item, scope));
      return node.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case ast::ExprKind::kDict: {
      Dict d;
      for (const auto& [k, v] : static_cast<const ast::DictExpr&>(expr).items) {
        Value key = eval(*k, scope);
        d.set(std::move(key), eval(*v, scope));
      }
      return Value::dict(std::move(d));
    }
    case ast::ExprKind::kGetAttr: {
      const auto& node = static_cast<const ast::GetAttr&>(expr);
      return get_attr(eval(*node.object, scope), node.attr);
    }
    case ast::ExprKind::kGetItem: {
      const auto& node = static_cast<const ast::GetItem&>(expr);
      Value object = eval(*node.object, scope);
      return get_item(object, eval(*node.index, scope));
    }
    case ast::ExprKind::kSlice:
      return slice(static_cast<const ast::Slice&>(expr), scope);
    case ast::ExprKind::kCall:
      return eval_call(static_cast<const ast::Call&>(expr), scope, nullptr);
    case ast::ExprKind::kFilter: {
      const auto& node = static_cast<const ast::Filter&>(expr);
      return apply_filter(node, eval(*node.input, scope), scope);
    }
    case ast::ExprKind::kTest: {
      const auto& node = static_cast<const ast::Test&>(expr);
      if (node.fn == nullptr) throw TemplateError("No test named '" + node.name + "' found.");
      Value input = eval(*node.input, scope);
      CallArgs args = eval_args(node.args, scope);
      return Value::boolean(node.fn(*this, input, args));
    }
    case ast::ExprKind::kUnary: {
      const auto& node = static_cast<const ast::Unary&>(expr);
      Value v = eval(*node.operand, scope);
      switch (node.op) {
        case ast::UnaryOp::kNot:
          return Value::boolean(!v.truthy());
        case ast::UnaryOp::kNeg:
          return negate(v);
        case ast::UnaryOp::kPos:
          return unary_plus(v);
      }
      return v;
    }
    case ast::ExprKind::kBinary: {
      const auto& node = static_cast<const ast::Binary&>(expr);
      Value left = eval(*node.left, scope);
      if (node.op == ast::BinaryOp::kAnd) return left.truthy() ? eval(*node.right, scope) : left;
      if (node.op == ast::BinaryOp::kOr) return left.truthy() ? left : eval(*node.right, scope);
      Value right = eval(*node.right, scope);
      return binary_op(node.op, left, right, limits_.max_string_bytes);
    }
    case ast::ExprKind::kCompare: {
      const auto& node = static_cast<const ast::Compare&>(expr);
      Value left = eval(*node.first, scope);
      for (const auto& [op, operand] : node.rest) {
        Value right = eval(*operand, scope);
        if (!compare(op, left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ast::ExprKind::kConcat: {
      std::string out;
      for (const auto& part : static_cast<const ast::Concat&>(expr).parts) {
        Value v = eval(*part, scope);
        std::string text = v.is_string() ? v.str() : to_str(v);
        if (out.size() + text.size() > limits_.max_string_bytes) {
          throw TemplateError("string is longer than " + std::to_string(limits_.max_string_bytes) +
                              " bytes");
        }
        out += text;
      }
      return Value::string(std::move(out));
    }
    case ast::ExprKind::kCondition: {
      const auto& node = static_cast<const ast::Condition&>(expr);
      if (eval(*node.cond, scope).truthy()) return eval(*node.then, scope);
      if (node.otherwise) return eval(*node.otherwise, scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(expr.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

CallArgs Interpreter::eval_args(const std::vector<ast::Arg>& args, const ScopePtr& scope) {
  CallArgs out;
  for (const ast::Arg& arg : args) {
    Value v = eval(*arg.value, scope);
    if (arg.name.empty()) {
      out.positional.push_back(std::move(v));
    } else {
      for (const auto& [name, unused] : out.keyword) {
        if (name == arg.name) throw TemplateError("keyword argument repeated: " + arg.name);
      }
      out.keyword.emplace_back(arg.name, std::move(v));
    }
  }
  return out;
}

Value Interpreter::eval_call(const ast::Call& node, const ScopePtr& scope, const Value* caller) {
  Value callee = eval(*node.callee, scope);
  CallArgs args = eval_args(node.args, scope);
  if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
  line_ = node.line;
  return call(callee, args);
}

Value Interpreter::apply_filter(const ast::Filter& node, const Value& input,
                                const ScopePtr& scope) {
  if (node.fn == nullptr) throw TemplateError("No filter named '" + node.name + "' found.");
  CallArgs args = eval_args(node.args, scope);
  line_ = node.line;
  return node.fn(*this, input, args);
}

Value Interpreter::apply_filter_chain(const ast::Filter& node, const Value& text,
                                      const ScopePtr& scope) {
  // In a filter block or block set the innermost filter has no input: it takes the body's
  // text, and each outer filter the result of the one inside it.
  if (!node.input) return apply_filter(node, text, scope);
  Value inner = apply_filter_chain(static_cast<const ast::Filter&>(*node.input), text, scope);
  return apply_filter(node, inner, scope);
}

Value Interpreter::slice(const ast::Slice& node, const ScopePtr& scope) {
  Value object = eval(*node.object, scope);
  std::optional<int64_t> start, stop, step_by;
  if (node.start) start = slice_bound(eval(*node.start, scope));
  if (node.stop) stop = slice_bound(eval(*node.stop, scope));
  if (node.step) step_by = slice_bound(eval(*node.step, scope));
  if (object.is_undefined()) raise_undefined(object);
  if (object.is_list()) {
    const auto& items = object.as_list().items;
    std::vector<Value> out;
    for (size_t i : slice_positions(items.size(), start, stop, step_by)) out.push_back(items[i]);
    step(out.size());
    return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (object.is_string()) {
    std::u32string u = py::decode(object.str());
    std::u32string out;
    for (size_t i : slice_positions(u.size(), start, stop, step_by)) out.push_back(u[i]);
    return Value::string(py::encode(out));
  }
  if (object.is_dict()) throw TemplateError("unhashable type: 'slice'");
  throw TemplateError("'" + object.type_name() + "' object is not subscriptable");
}

}  // namespace sy::jinja
