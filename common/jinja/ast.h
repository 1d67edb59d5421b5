// The parsed template: expressions and statements. The tree is immutable after parsing and
// shared by every render of the template (renders may run on several threads at once).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/jinja/value.h"

namespace sy::jinja {

class Interpreter;
using FilterFn = Value (*)(Interpreter&, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& input, const CallArgs& args);

namespace ast {

enum class ExprKind {
  kLiteral,
  kName,
  kList,  // list or tuple display
  kDict,
  kGetAttr,
  kGetItem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kUnary,
  kBinary,
  kCompare,
  kConcat,
  kCondition,
};

struct Expr {
  explicit Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

// One argument of a call, filter or test; `name` is empty for a positional one.
struct Arg {
  std::string name;
  ExprPtr value;
};

struct Literal : Expr {
  Literal(int l, Value v) : Expr(ExprKind::kLiteral, l), value(std::move(v)) {}
  Value value;
};

struct Name : Expr {
  Name(int l, std::string n) : Expr(ExprKind::kName, l), name(std::move(n)) {}
  std::string name;
};

struct ListExpr : Expr {
  ListExpr(int l, bool tuple) : Expr(ExprKind::kList, l), is_tuple(tuple) {}
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::kDict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetAttr : Expr {
  GetAttr(int l, ExprPtr o, std::string a)
      : Expr(ExprKind::kGetAttr, l), object(std::move(o)), attr(std::move(a)) {}
  ExprPtr object;
  std::string attr;
};

struct GetItem : Expr {
  GetItem(int l, ExprPtr o, ExprPtr i)
      : Expr(ExprKind::kGetItem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};

struct Slice : Expr {
  explicit Slice(int l) : Expr(ExprKind::kSlice, l) {}
  ExprPtr object;
  ExprPtr start, stop, step;  // each may be null
};

struct Call : Expr {
  Call(int l, ExprPtr c) : Expr(ExprKind::kCall, l), callee(std::move(c)) {}
  ExprPtr callee;
  std::vector<Arg> args;
};

// `input | name(args)`. In a filter block or block set the input is null: the body's text.
// `fn` is null for an unknown filter: an error when the template is parsed unless it sits
// in an if-statement or conditional expression, where it only fails if run (as in Jinja).
struct Filter : Expr {
  Filter(int l, int c, ExprPtr in, std::string n, FilterFn f)
      : Expr(ExprKind::kFilter, l), column(c), input(std::move(in)), name(std::move(n)), fn(f) {}
  int column;
  ExprPtr input;
  std::string name;
  FilterFn fn;
  std::vector<Arg> args;
};

// `input is name(args)`; `is not` wraps it in a kNot unary. `fn` as for Filter.
struct Test : Expr {
  Test(int l, int c, ExprPtr in, std::string n, TestFn f)
      : Expr(ExprKind::kTest, l), column(c), input(std::move(in)), name(std::move(n)), fn(f) {}
  int column;
  ExprPtr input;
  std::string name;
  TestFn fn;
  std::vector<Arg> args;
};

enum class UnaryOp { kNot, kNeg, kPos };
struct Unary : Expr {
  Unary(int l, UnaryOp o, ExprPtr e) : Expr(ExprKind::kUnary, l), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kAnd, kOr };
struct Binary : Expr {
  Binary(int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::kBinary, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
// Chained as in Python: a < b < c.
struct Compare : Expr {
  Compare(int l, ExprPtr f) : Expr(ExprKind::kCompare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

// a ~ b ~ c
struct Concat : Expr {
  explicit Concat(int l) : Expr(ExprKind::kConcat, l) {}
  std::vector<ExprPtr> parts;
};

// `then if cond else otherwise`; without else the result is undefined.
struct Condition : Expr {
  Condition(int l, ExprPtr t, ExprPtr c, ExprPtr o)
      : Expr(ExprKind::kCondition, l),
        then(std::move(t)),
        cond(std::move(c)),
        otherwise(std::move(o)) {}
  ExprPtr then, cond, otherwise;
};

enum class StmtKind {
  kText,
  kOutput,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kBreak,
  kContinue,
  kScope,  // {% generation %}: renders its body
};

struct Stmt {
  explicit Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Where a set, for or with stores: one name, several names (unpacking), or ns.attr.
struct Target {
  std::vector<std::string> names;
  bool unpack = false;
  std::string attr;  // non-empty: names[0].attr on a namespace
};

struct Text : Stmt {
  Text(int l, std::string t) : Stmt(StmtKind::kText, l), text(std::move(t)) {}
  std::string text;
};

struct Output : Stmt {
  Output(int l, ExprPtr e) : Stmt(StmtKind::kOutput, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct If : Stmt {
  explicit If(int l) : Stmt(StmtKind::kIf, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body otherwise;
};

struct For : Stmt {
  explicit For(int l) : Stmt(StmtKind::kFor, l) {}
  Target target;
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  Body body;
  Body otherwise;  // runs when no item was iterated
};

struct Set : Stmt {
  explicit Set(int l) : Stmt(StmtKind::kSet, l) {}
  Target target;
  ExprPtr value;
};

struct SetBlock : Stmt {
  explicit SetBlock(int l) : Stmt(StmtKind::kSetBlock, l) {}
  Target target;
  ExprPtr filter;  // filter chain applied to the body's text; may be null
  Body body;
};

struct MacroDef {
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default may be null
  Body body;
  bool uses_varargs = false;
  bool uses_kwargs = false;
  bool uses_caller = false;
};

struct Macro : Stmt {
  explicit Macro(int l) : Stmt(StmtKind::kMacro, l) {}
  MacroDef def;
};

struct CallBlock : Stmt {
  explicit CallBlock(int l) : Stmt(StmtKind::kCallBlock, l) {}
  MacroDef caller;  // the body, callable as caller(args)
  ExprPtr call;     // a kCall expression
};

struct FilterBlock : Stmt {
  explicit FilterBlock(int l) : Stmt(StmtKind::kFilterBlock, l) {}
  ExprPtr filter;
  Body body;
};

struct With : Stmt {
  explicit With(int l) : Stmt(StmtKind::kWith, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct LoopControl : Stmt {
  LoopControl(int l, bool is_break) : Stmt(is_break ? StmtKind::kBreak : StmtKind::kContinue, l) {}
};

struct Scope : Stmt {
  explicit Scope(int l) : Stmt(StmtKind::kScope, l) {}
  Body body;
};

struct Program {
  Body body;
};

}  // namespace ast
}  // namespace sy::jinja
