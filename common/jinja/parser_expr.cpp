// The expression grammar, with Jinja's precedence: condition < or < and < not <
// comparisons < + - < ~ < * / // % < ** < unary < postfix (. [] ()), filters and tests.
#include "common/jinja/builtins.h"
#include "common/jinja/parser_impl.h"

namespace sy::jinja {

bool ExpressionParser::at_tuple_end(std::initializer_list<std::string_view> extra_ends) const {
  TokenType t = cur().type;
  if (t == TokenType::kVarEnd || t == TokenType::kBlockEnd || at_op(")")) return true;
  for (std::string_view end : extra_ends) {
    if (at_name(end)) return true;
  }
  return false;
}

// Expressions separated by commas form a tuple: {{ a, b }}, for x in 1, 2.
ast::ExprPtr ExpressionParser::parse_tuple(bool with_condition,
                                           std::initializer_list<std::string_view> extra_ends,
                                           bool explicit_parens) {
  int line = cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (at_tuple_end(extra_ends)) break;
    items.push_back(parse_expression(with_condition));
    if (!at_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail(cur(), "expected an expression, got " + describe(cur()));
  }
  auto tuple = std::make_unique<ast::ListExpr>(line, true);
  tuple->items = std::move(items);
  return tuple;
}

ast::ExprPtr ExpressionParser::parse_expression(bool with_condition) {
  DepthGuard guard(this);
  if (!with_condition) return parse_or();
  ExprPtr expr = parse_or();
  while (at_name("if")) {
    int line = advance().line;
    ExprPtr cond = parse_or();
    ExprPtr otherwise;
    if (skip_name("else")) otherwise = parse_expression(true);
    expr = std::make_unique<ast::Condition>(line, std::move(expr), std::move(cond),
                                            std::move(otherwise));
  }
  return expr;
}

ast::ExprPtr ExpressionParser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    int line = advance().line;
    left = std::make_unique<ast::Binary>(line, ast::BinaryOp::kOr, std::move(left), parse_and());
  }
  return left;
}

ast::ExprPtr ExpressionParser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    int line = advance().line;
    left = std::make_unique<ast::Binary>(line, ast::BinaryOp::kAnd, std::move(left), parse_not());
  }
  return left;
}

ast::ExprPtr ExpressionParser::parse_not() {
  if (at_name("not")) {
    DepthGuard guard(this);
    int line = advance().line;
    return std::make_unique<ast::Unary>(line, ast::UnaryOp::kNot, parse_not());
  }
  return parse_compare();
}

ast::ExprPtr ExpressionParser::parse_compare() {
  int line = cur().line;
  ExprPtr first = parse_math1();
  std::unique_ptr<ast::Compare> cmp;
  while (true) {
    ast::CompareOp op;
    if (at_op("=="))
      op = ast::CompareOp::kEq;
    else if (at_op("!="))
      op = ast::CompareOp::kNe;
    else if (at_op("<"))
      op = ast::CompareOp::kLt;
    else if (at_op("<="))
      op = ast::CompareOp::kLe;
    else if (at_op(">"))
      op = ast::CompareOp::kGt;
    else if (at_op(">="))
      op = ast::CompareOp::kGe;
    else if (at_name("in"))
      op = ast::CompareOp::kIn;
    else if (at_name("not") && look().type == TokenType::kName && look().text == "in") {
      advance();
      op = ast::CompareOp::kNotIn;
    } else {
      break;
    }
    advance();
    if (!cmp) cmp = std::make_unique<ast::Compare>(line, std::move(first));
    cmp->rest.emplace_back(op, parse_math1());
  }
  if (cmp) return cmp;
  return first;
}

ast::ExprPtr ExpressionParser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    const Token& t = advance();
    auto op = t.text == "+" ? ast::BinaryOp::kAdd : ast::BinaryOp::kSub;
    left = std::make_unique<ast::Binary>(t.line, op, std::move(left), parse_concat());
  }
  return left;
}

ast::ExprPtr ExpressionParser::parse_concat() {
  int line = cur().line;
  ExprPtr first = parse_math2();
  if (!at_op("~")) return first;
  auto concat = std::make_unique<ast::Concat>(line);
  concat->parts.push_back(std::move(first));
  while (skip_op("~")) concat->parts.push_back(parse_math2());
  return concat;
}

ast::ExprPtr ExpressionParser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    const Token& t = advance();
    ast::BinaryOp op = t.text == "*"    ? ast::BinaryOp::kMul
                       : t.text == "/"  ? ast::BinaryOp::kDiv
                       : t.text == "//" ? ast::BinaryOp::kFloorDiv
                                        : ast::BinaryOp::kMod;
    left = std::make_unique<ast::Binary>(t.line, op, std::move(left), parse_pow());
  }
  return left;
}

ast::ExprPtr ExpressionParser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (at_op("**")) {
    int line = advance().line;
    left = std::make_unique<ast::Binary>(line, ast::BinaryOp::kPow, std::move(left),
                                         parse_unary(true));
  }
  return left;
}

ast::ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  DepthGuard guard(this);
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    const Token& t = advance();
    auto op = t.text == "-" ? ast::UnaryOp::kNeg : ast::UnaryOp::kPos;
    node = std::make_unique<ast::Unary>(t.line, op, parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ast::ExprPtr ExpressionParser::parse_primary() {
  const Token& t = cur();
  switch (t.type) {
    case TokenType::kName: {
      advance();
      if (t.text == "true" || t.text == "True") return literal(t.line, Value::boolean(true));
      if (t.text == "false" || t.text == "False") return literal(t.line, Value::boolean(false));
      if (t.text == "none" || t.text == "None") return literal(t.line, Value::none());
      if (!macros_.empty()) {
        if (t.text == "varargs") macros_.back()->uses_varargs = true;
        if (t.text == "kwargs") macros_.back()->uses_kwargs = true;
        if (t.text == "caller") macros_.back()->uses_caller = true;
      }
      return std::make_unique<ast::Name>(t.line, t.text);
    }
    case TokenType::kString: {
      int line = t.line;
      std::string s = advance().text;
      while (cur().type == TokenType::kString) s += advance().text;  // "a" "b" is "ab"
      return literal(line, Value::string(std::move(s)));
    }
    case TokenType::kInteger:
      advance();
      return literal(t.line, Value::integer(t.int_value));
    case TokenType::kFloat:
      advance();
      return literal(t.line, Value::number(t.float_value));
    default:
      break;
  }
  if (skip_op("(")) {
    ExprPtr inner = parse_tuple(true, {}, true);
    expect_op(")");
    return inner;
  }
  if (at_op("[")) {
    auto list = std::make_unique<ast::ListExpr>(advance().line, false);
    while (!at_op("]")) {
      if (!list->items.empty()) expect_op(",");
      if (at_op("]")) break;
      list->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return list;
  }
  if (at_op("{")) {
    auto dict = std::make_unique<ast::DictExpr>(advance().line);
    while (!at_op("}")) {
      if (!dict->items.empty()) expect_op(",");
      if (at_op("}")) break;
      ExprPtr key = parse_expression(true);
      expect_op(":");
      dict->items.emplace_back(std::move(key), parse_expression(true));
    }
    expect_op("}");
    return dict;
  }
  fail(t, "unexpected " + describe(t));
}

ast::ExprPtr ExpressionParser::literal(int line, Value v) {
  return std::make_unique<ast::Literal>(line, std::move(v));
}

ast::ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".")) {
      int line = advance().line;
      const Token& t = cur();
      if (t.type == TokenType::kName) {
        node = std::make_unique<ast::GetAttr>(line, std::move(node), advance().text);
      } else if (t.type == TokenType::kInteger) {
        advance();
        node = std::make_unique<ast::GetItem>(line, std::move(node),
                                              literal(line, Value::integer(t.int_value)));
      } else {
        fail(t, "expected name or number, got " + describe(t));
      }
    } else if (at_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ast::ExprPtr ExpressionParser::parse_subscript(ExprPtr object) {
  int line = advance().line;  // '['
  ExprPtr start;
  if (at_op("]") || !at_op(":")) {
    // x[i]; x[] and x[a, b] index with a tuple, as in Jinja (dicts never hold those keys).
    auto tuple = std::make_unique<ast::ListExpr>(line, true);
    while (!at_op("]")) {
      if (!tuple->items.empty()) expect_op(",");
      tuple->items.push_back(parse_expression(true));
      if (tuple->items.size() == 1 && at_op(":")) break;
    }
    if (at_op("]") && tuple->items.size() != 1) {
      advance();
      return std::make_unique<ast::GetItem>(line, std::move(object), std::move(tuple));
    }
    start = std::move(tuple->items[0]);
    if (!at_op(":")) {
      expect_op("]");
      return std::make_unique<ast::GetItem>(line, std::move(object), std::move(start));
    }
  }
  auto slice = std::make_unique<ast::Slice>(line);
  slice->object = std::move(object);
  slice->start = std::move(start);
  expect_op(":");
  if (!at_op(":") && !at_op("]")) slice->stop = parse_expression(true);
  if (skip_op(":") && !at_op("]")) slice->step = parse_expression(true);
  expect_op("]");
  return slice;
}

std::vector<ast::Arg> ExpressionParser::parse_args() {
  expect_op("(");
  std::vector<ast::Arg> args;
  bool keyword_seen = false;
  while (!at_op(")")) {
    if (!args.empty()) {
      expect_op(",");
      if (at_op(")")) break;
    }
    if (at_op("*") || at_op("**")) fail(cur(), "*args and **kwargs in calls are not supported");
    ast::Arg arg;
    if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
        look().text == "=") {
      arg.name = advance().text;
      advance();
      keyword_seen = true;
    } else if (keyword_seen) {
      fail(cur(), "positional argument follows keyword argument");
    }
    arg.value = parse_expression(true);
    args.push_back(std::move(arg));
  }
  expect_op(")");
  return args;
}

ast::ExprPtr ExpressionParser::parse_call(ExprPtr callee) {
  auto call = std::make_unique<ast::Call>(cur().line, std::move(callee));
  call->args = parse_args();
  return call;
}

ast::ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|")) {
      node = parse_filter_chain(std::move(node), false, true);
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

// "| f(args) | g" (or "f(args) | g" when `inline_first`, as after {% filter %}). With
// `single`, parses one filter only (the caller loops).
ast::ExprPtr ExpressionParser::parse_filter_chain(ExprPtr input, bool inline_first, bool single) {
  bool first = true;
  while (at_op("|") || (first && inline_first)) {
    if (!(first && inline_first)) advance();
    first = false;
    const Token& t = cur();
    std::string name = expect_name();
    auto filter =
        std::make_unique<ast::Filter>(t.line, t.column, std::move(input), name, find_filter(name));
    if (at_op("(")) filter->args = parse_args();
    input = std::move(filter);
    if (single) break;
  }
  return input;
}

ast::ExprPtr ExpressionParser::parse_test(ExprPtr input) {
  int line = advance().line;  // 'is'
  bool negated = skip_name("not");
  const Token& t = cur();
  std::string name = expect_name();
  auto test = std::make_unique<ast::Test>(line, t.column, std::move(input), name, find_test(name));
  if (at_op("(")) {
    test->args = parse_args();
  } else {
    // One argument without parentheses: `is divisibleby 3`, `is sameas false`.
    TokenType type = cur().type;
    bool starts_arg = type == TokenType::kName || type == TokenType::kString ||
                      type == TokenType::kInteger || type == TokenType::kFloat || at_op("(") ||
                      at_op("[") || at_op("{");
    if (starts_arg && !at_name("else") && !at_name("or") && !at_name("and")) {
      if (at_name("is")) fail(cur(), "You cannot chain multiple tests with is");
      ast::Arg arg;
      arg.value = parse_postfix(parse_primary());
      test->args.push_back(std::move(arg));
    }
  }
  if (!negated) return test;
  return std::make_unique<ast::Unary>(line, ast::UnaryOp::kNot, std::move(test));
}

}  // namespace sy::jinja
