// Internal to the parser: the token cursor and the expression grammar, shared by the
// statement parser (parser.cpp) and defined in parser_expr.cpp.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/error.h"
#include "common/jinja/lexer.h"
#include "common/jinja/parser.h"

namespace sy::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  using ExprPtr = ast::ExprPtr;

  // Expressions separated by commas form a tuple: {{ a, b }}, for x in 1, 2.
  ExprPtr parse_tuple(bool with_condition, std::initializer_list<std::string_view> extra_ends,
                      bool explicit_parens = false);
  // A conditional expression (`a if c else b`) unless `with_condition` is false.
  ExprPtr parse_expression(bool with_condition);
  // "| f(args) | g" (or "f(args) | g" when `inline_first`, as after {% filter %}). With
  // `single`, parses one filter only (the caller loops).
  ExprPtr parse_filter_chain(ExprPtr input, bool inline_first, bool single = false);

 protected:
  // Counts nesting so that hostile input fails cleanly instead of overflowing the stack.
  struct DepthGuard {
    explicit DepthGuard(ExpressionParser* p) : parser(p) {
      if (++parser->depth_ > kMaxParseDepth)
        parser->fail(parser->cur(), "template nesting is too deep");
    }
    ~DepthGuard() { --parser->depth_; }
    ExpressionParser* parser;
  };

  const Token& cur() const { return tokens_[pos_]; }
  const Token& look(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }

  [[noreturn]] void fail(const Token& t, const std::string& message) const {
    throw TemplateError(message, TemplateError::Kind::kSyntax, t.line, t.column);
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kText:
        return "template text";
      case TokenType::kVarBegin:
        return "'{{'";
      case TokenType::kVarEnd:
        return "end of print statement";
      case TokenType::kBlockBegin:
        return "'{%'";
      case TokenType::kBlockEnd:
        return "end of statement block";
      case TokenType::kString:
        return "string";
      case TokenType::kInteger:
        return "integer";
      case TokenType::kFloat:
        return "float";
      case TokenType::kEnd:
        return "end of template";
      default:
        return "'" + t.text + "'";
    }
  }

  bool at_op(std::string_view op) const {
    return cur().type == TokenType::kOperator && cur().text == op;
  }
  bool at_name(std::string_view name) const {
    return cur().type == TokenType::kName && cur().text == name;
  }
  bool skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    advance();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail(cur(), "expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName) fail(cur(), "expected a name, got " + describe(cur()));
    return advance().text;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  // Macro bodies being parsed: a macro that names varargs, kwargs or caller accepts them.
  std::vector<ast::MacroDef*> macros_;

 private:
  bool at_tuple_end(std::initializer_list<std::string_view> extra_ends) const;
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  static ExprPtr literal(int line, Value v);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr object);
  std::vector<ast::Arg> parse_args();
  ExprPtr parse_call(ExprPtr callee);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_test(ExprPtr input);
};

}  // namespace sy::jinja
