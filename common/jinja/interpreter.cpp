#include "common/jinja/interpreter.h"

#include <optional>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/format.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {

const Value* Scope::find(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
    for (const auto& [n, v] : s->vars) {
      if (n == name) return &v;
    }
    if (s->context != nullptr) {
      if (const Value* v = s->context->find(name)) return v;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value v) {
  for (auto& [n, value] : vars) {
    if (n == name) {
      value = std::move(v);
      return;
    }
  }
  vars.emplace_back(std::string(name), std::move(v));
}

Interpreter::DepthGuard::DepthGuard(Interpreter* in) : in_(in) {
  if (++in_->depth_ > in_->limits_.max_eval_depth) {
    --in_->depth_;
    throw TemplateError("template nesting is deeper than " +
                        std::to_string(in_->limits_.max_eval_depth));
  }
}

// Sends output to another buffer (macro bodies, block sets) for its lifetime.
struct Interpreter::OutputRedirect {
  OutputRedirect(Interpreter* in, std::string* to) : in_(in), saved_(in->out_) { in->out_ = to; }
  ~OutputRedirect() { in_->out_ = saved_; }
  Interpreter* in_;
  std::string* saved_;
};

Interpreter::Interpreter(const ast::Program& program, const Limits& limits)
    : program_(program), limits_(limits) {}

Interpreter::~Interpreter() {
  for (const ScopePtr& s : captured_) s->vars.clear();
  for (const auto& ns : namespaces_) ns->attrs = Dict();
}

std::string Interpreter::render(const Dict& variables) {
  AllocationBudget budget(limits_.max_alloc_bytes, limits_.max_string_bytes);
  std::string out;
  OutputRedirect redirect(this, &out);
  auto root = std::make_shared<Scope>(nullptr, &variables);
  captured_.push_back(root);
  try {
    exec_body(program_.body, root);
  } catch (const TemplateError& e) {
    if (e.line() == 0 && e.kind() == TemplateError::Kind::kRender && line_ > 0) {
      throw e.with_line(line_);
    }
    throw;
  } catch (const std::out_of_range& e) {
    throw TemplateError(std::string("value out of range: ") + e.what(),
                        TemplateError::Kind::kRender, line_);
  } catch (const std::invalid_argument& e) {
    throw TemplateError(std::string("invalid argument: ") + e.what(), TemplateError::Kind::kRender,
                        line_);
  }
  return out;
}

void Interpreter::step(uint64_t n) {
  steps_ += n;
  if (steps_ > limits_.max_steps) {
    throw TemplateError("template ran more than " + std::to_string(limits_.max_steps) + " steps");
  }
}

void Interpreter::emit(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    throw TemplateError("template output is longer than " +
                        std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out_->append(text);
}

Interpreter::Flow Interpreter::exec_body(const ast::Body& body, const ScopePtr& scope) {
  for (const ast::StmtPtr& stmt : body) {
    Flow flow = exec(*stmt, scope);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

std::string Interpreter::capture(const ast::Body& body, const ScopePtr& scope) {
  std::string text;
  OutputRedirect redirect(this, &text);
  exec_body(body, scope);
  return text;
}

Interpreter::Flow Interpreter::exec(const ast::Stmt& stmt, const ScopePtr& scope) {
  DepthGuard guard(this);
  step();
  line_ = stmt.line;
  switch (stmt.kind) {
    case ast::StmtKind::kText:
      emit(static_cast<const ast::Text&>(stmt).text);
      return Flow::kNormal;
    case ast::StmtKind::kOutput: {
      Value v = eval(*static_cast<const ast::Output&>(stmt).expr, scope);
      if (v.is_string()) {
        emit(v.str());
      } else {
        emit(to_str(v));
      }
      return Flow::kNormal;
    }
    case ast::StmtKind::kIf: {
      const auto& node = static_cast<const ast::If&>(stmt);
      for (const auto& [cond, body] : node.branches) {
        if (eval(*cond, scope).truthy()) return exec_body(body, scope);
      }
      return exec_body(node.otherwise, scope);
    }
    case ast::StmtKind::kFor:
      return exec_for(static_cast<const ast::For&>(stmt), scope);
    case ast::StmtKind::kSet: {
      const auto& node = static_cast<const ast::Set&>(stmt);
      assign(node.target, eval(*node.value, scope), *scope);
      return Flow::kNormal;
    }
    case ast::StmtKind::kSetBlock: {
      const auto& node = static_cast<const ast::SetBlock&>(stmt);
      Value text = Value::string(capture(node.body, std::make_shared<Scope>(scope)));
      if (node.filter) {
        text = apply_filter_chain(static_cast<const ast::Filter&>(*node.filter), text, scope);
      }
      assign(node.target, std::move(text), *scope);
      return Flow::kNormal;
    }
    case ast::StmtKind::kMacro: {
      const auto& def = static_cast<const ast::Macro&>(stmt).def;
      scope->set(def.name, make_macro(def, scope));
      return Flow::kNormal;
    }
    case ast::StmtKind::kCallBlock:
      exec_call_block(static_cast<const ast::CallBlock&>(stmt), scope);
      return Flow::kNormal;
    case ast::StmtKind::kFilterBlock: {
      const auto& node = static_cast<const ast::FilterBlock&>(stmt);
      Value text = Value::string(capture(node.body, std::make_shared<Scope>(scope)));
      Value result = apply_filter_chain(static_cast<const ast::Filter&>(*node.filter), text, scope);
      emit(result.is_string() ? result.str() : to_str(result));
      return Flow::kNormal;
    }
    case ast::StmtKind::kWith: {
      const auto& node = static_cast<const ast::With&>(stmt);
      std::vector<Value> values;
      for (const auto& [target, expr] : node.assignments) values.push_back(eval(*expr, scope));
      auto inner = std::make_shared<Scope>(scope);
      for (size_t i = 0; i < values.size(); ++i) {
        assign(node.assignments[i].first, std::move(values[i]), *inner);
      }
      return exec_body(node.body, inner);
    }
    case ast::StmtKind::kBreak:
      return Flow::kBreak;
    case ast::StmtKind::kContinue:
      return Flow::kContinue;
    case ast::StmtKind::kScope:
      return exec_body(static_cast<const ast::Scope&>(stmt).body, scope);
  }
  return Flow::kNormal;
}

namespace {

// State shared by the iterations of one loop, for loop.cycle() and loop.changed().
struct LoopState {
  int64_t index0 = 0;
  bool has_last = false;
  std::vector<Value> last;
};

}  // namespace

Interpreter::Flow Interpreter::exec_for(const ast::For& node, const ScopePtr& scope) {
  std::vector<Value> items = iterate(eval(*node.iterable, scope));
  step(items.size());
  if (node.filter) {
    // `for x in xs if cond`: the condition sees the loop variable, not `loop`.
    std::vector<Value> kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(node.target, item, *probe);
      if (eval(*node.filter, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(node.otherwise, std::make_shared<Scope>(scope));

  auto state = std::make_shared<LoopState>();
  auto cycle = std::make_shared<Function>();
  cycle->name = "cycle";
  cycle->call = [state](Interpreter&, const CallArgs& args) {
    if (args.positional.empty()) throw TemplateError("no items for cycling given");
    return args.positional[static_cast<size_t>(state->index0) % args.positional.size()];
  };
  auto changed = std::make_shared<Function>();
  changed->name = "changed";
  changed->call = [state](Interpreter&, const CallArgs& args) {
    bool same = state->has_last && state->last.size() == args.positional.size();
    for (size_t i = 0; same && i < args.positional.size(); ++i) {
      same = py_equal(state->last[i], args.positional[i]);
    }
    state->has_last = true;
    state->last = args.positional;
    return Value::boolean(!same);
  };
  Value cycle_value = Value::function(cycle);
  Value changed_value = Value::function(changed);

  static const char* const kKeyNames[] = {"index",    "index0", "revindex", "revindex0", "first",
                                          "last",     "length", "depth",    "depth0",    "previtem",
                                          "nextitem", "cycle",  "changed"};
  std::vector<Value> keys;
  for (const char* name : kKeyNames) keys.push_back(Value::string(name));
  const Value no_previous = Value::undefined("there is no previous item");
  const Value no_next = Value::undefined("there is no next item");

  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    step();
    state->index0 = i;
    auto inner = std::make_shared<Scope>(scope);
    assign(node.target, items[static_cast<size_t>(i)], *inner);
    // Keys are built once per loop; only the values change per iteration.
    Dict loop;
    loop.set(keys[0], Value::integer(i + 1));
    loop.set(keys[1], Value::integer(i));
    loop.set(keys[2], Value::integer(n - i));
    loop.set(keys[3], Value::integer(n - i - 1));
    loop.set(keys[4], Value::boolean(i == 0));
    loop.set(keys[5], Value::boolean(i == n - 1));
    loop.set(keys[6], Value::integer(n));
    loop.set(keys[7], Value::integer(1));
    loop.set(keys[8], Value::integer(0));
    loop.set(keys[9], i > 0 ? items[static_cast<size_t>(i - 1)] : no_previous);
    loop.set(keys[10], i + 1 < n ? items[static_cast<size_t>(i + 1)] : no_next);
    loop.set(keys[11], cycle_value);
    loop.set(keys[12], changed_value);
    inner->set("loop", Value::dict(std::move(loop)));
    if (exec_body(node.body, inner) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::assign(const ast::Target& target, Value value, Scope& scope) {
  if (!target.attr.empty()) {
    const Value* ns = scope.find(target.names[0]);
    if (ns == nullptr || !ns->is_namespace()) {
      throw TemplateError("cannot assign attribute on non-namespace object");
    }
    if (value.has_namespace()) throw TemplateError("a namespace attribute cannot hold a namespace");
    if (value.depth() >= kMaxValueDepth) {
      throw TemplateError("value nesting is deeper than " + std::to_string(kMaxValueDepth));
    }
    ns->as_namespace().attrs.set(Value::string(target.attr), std::move(value));
    return;
  }
  if (!target.unpack) {
    scope.set(target.names[0], std::move(value));
    return;
  }
  std::vector<Value> items = iterate(value);
  size_t want = target.names.size();
  if (items.size() > want) {
    throw TemplateError("too many values to unpack (expected " + std::to_string(want) + ")");
  }
  if (items.size() < want) {
    throw TemplateError("not enough values to unpack (expected " + std::to_string(want) + ", got " +
                        std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < want; ++i) scope.set(target.names[i], std::move(items[i]));
}

Value Interpreter::make_macro(const ast::MacroDef& def, const ScopePtr& scope) {
  captured_.push_back(scope);
  auto fn = std::make_shared<Function>();
  fn->name = def.name;
  fn->is_macro = true;
  const ast::MacroDef* d = &def;
  ScopePtr closure = scope;
  fn->call = [d, closure](Interpreter& in, const CallArgs& args) {
    return in.call_macro(*d, closure, args);
  };
  return Value::function(std::move(fn));
}

Value Interpreter::call_macro(const ast::MacroDef& def, const ScopePtr& closure,
                              const CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    throw TemplateError("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
  }
  ++call_depth_;
  struct Unwind {
    int* depth;
    ~Unwind() { --*depth; }
  } unwind{&call_depth_};

  auto scope = std::make_shared<Scope>(closure);
  const size_t n = def.params.size();
  std::vector<bool> bound(n, false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n) {
      scope->set(def.params[i].first, args.positional[i]);
      bound[i] = true;
    } else if (def.uses_varargs) {
      extra.push_back(args.positional[i]);
    } else {
      throw TemplateError("macro '" + def.name + "' takes not more than " + std::to_string(n) +
                          " argument(s)");
    }
  }
  Dict extra_kwargs;
  Value caller = Value::undefined("No caller defined");
  for (const auto& [name, value] : args.keyword) {
    size_t i = 0;
    while (i < n && def.params[i].first != name) ++i;
    if (i < n) {
      if (bound[i]) {
        throw TemplateError("macro '" + def.name + "' got multiple values for argument '" + name +
                            "'");
      }
      scope->set(name, value);
      bound[i] = true;
    } else if (name == "caller" && def.uses_caller) {
      caller = value;
    } else if (def.uses_kwargs) {
      extra_kwargs.set(Value::string(name), value);
    } else {
      throw TemplateError("macro '" + def.name + "' takes no keyword argument '" + name + "'");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    const auto& [name, fallback] = def.params[i];
    scope->set(name, fallback ? eval(*fallback, scope)
                              : Value::undefined("parameter '" + name + "' was not provided"));
  }
  if (def.uses_varargs) scope->set("varargs", Value::tuple(std::move(extra)));
  if (def.uses_kwargs) scope->set("kwargs", Value::dict(std::move(extra_kwargs)));
  if (def.uses_caller) scope->set("caller", caller);
  return Value::string(capture(def.body, scope));
}

void Interpreter::exec_call_block(const ast::CallBlock& node, const ScopePtr& scope) {
  Value caller = make_macro(node.caller, scope);
  Value result = eval_call(static_cast<const ast::Call&>(*node.call), scope, &caller);
  emit(result.is_string() ? result.str() : to_str(result));
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) raise_undefined(callee);
  if (!callee.is_function()) {
    throw TemplateError("'" + callee.type_name() + "' object is not callable");
  }
  return callee.as_function().call(*this, args);
}

}  // namespace sy::jinja
