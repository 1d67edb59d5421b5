// Renders a parsed template. One Interpreter serves one render on one thread: it owns the
// scopes, the output buffer and the counters that bound a hostile template's work (steps,
// nesting, output and allocation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/value.h"

namespace sy::jinja {

// Bounds on one render. Exceeding one raises TemplateError; none is reached by a real chat
// template on a real conversation.
struct Limits {
  uint64_t max_steps = 20'000'000;     // expressions evaluated + statements run
  size_t max_output_bytes = 16 << 20;  // rendered text
  size_t max_string_bytes = 16 << 20;  // any one string or list built
  size_t max_alloc_bytes = 256 << 20;  // all strings and containers built, in total
  int max_call_depth = 50;             // nested macro calls
  int max_eval_depth = 500;            // nested evaluation (expressions, blocks, calls)
  int64_t max_range = 100'000;         // range() length, as Jinja's sandbox MAX_RANGE
};

// A variable scope. Loop iterations, macro calls and blocks get a child scope, so their
// assignments do not leak out, as in Jinja.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> p, const Dict* ctx = nullptr)
      : parent(std::move(p)), context(ctx) {}
  const Value* find(std::string_view name) const;
  void set(std::string_view name, Value v);

  std::shared_ptr<Scope> parent;
  const Dict* context;  // the render's variables (root scope only)
  std::vector<std::pair<std::string, Value>> vars;
};

class Interpreter {
 public:
  Interpreter(const ast::Program& program, const Limits& limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Runs the template once. Throws TemplateError.
  std::string render(const Dict& variables);

  // Used by builtins.
  const Limits& limits() const { return limits_; }
  Value call(const Value& callee, const CallArgs& args);
  Value get_attr(const Value& object, std::string_view name);
  Value get_item(const Value& object, const Value& key);
  // Charges `n` units of work against the step limit.
  void step(uint64_t n = 1);
  // Keeps a namespace made during the render so that it can be emptied afterwards: a
  // namespace may reach itself through a bound method or macro, and that cycle would leak.
  void adopt(std::shared_ptr<Namespace> ns) { namespaces_.push_back(std::move(ns)); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using ScopePtr = std::shared_ptr<Scope>;

  // Counts nested evaluation so that deep recursion fails cleanly before the stack does.
  struct DepthGuard {
    explicit DepthGuard(Interpreter* in);
    ~DepthGuard() { --in_->depth_; }
    Interpreter* in_;
  };
  struct OutputRedirect;

  Flow exec_body(const ast::Body& body, const ScopePtr& scope);
  Flow exec(const ast::Stmt& stmt, const ScopePtr& scope);
  Flow exec_for(const ast::For& node, const ScopePtr& scope);
  void exec_call_block(const ast::CallBlock& node, const ScopePtr& scope);
  void assign(const ast::Target& target, Value value, Scope& scope);
  std::string capture(const ast::Body& body, const ScopePtr& scope);
  Value make_macro(const ast::MacroDef& def, const ScopePtr& scope);
  Value call_macro(const ast::MacroDef& def, const ScopePtr& closure, const CallArgs& args);

  Value eval(const ast::Expr& expr, const ScopePtr& scope);
  Value eval_call(const ast::Call& node, const ScopePtr& scope, const Value* caller);
  CallArgs eval_args(const std::vector<ast::Arg>& args, const ScopePtr& scope);
  Value apply_filter(const ast::Filter& node, const Value& input, const ScopePtr& scope);
  Value apply_filter_chain(const ast::Filter& node, const Value& text, const ScopePtr& scope);
  Value slice(const ast::Slice& node, const ScopePtr& scope);

  void emit(std::string_view text);

  const ast::Program& program_;
  Limits limits_;
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int depth_ = 0;
  int call_depth_ = 0;
  int line_ = 0;
  // Scopes that macros captured: cleared after the render so that scope -> macro -> scope
  // cycles do not leak.
  std::vector<ScopePtr> captured_;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
};

}  // namespace sy::jinja
