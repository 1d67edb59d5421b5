#include "common/jinja/parser.h"

#include "common/jinja/parser_impl.h"

namespace sy::jinja {
namespace {

using ast::ExprPtr;
using ast::StmtPtr;

// Statements: text, {{ }} and the block tags, each parsed down to its end tag.
class Parser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  std::unique_ptr<ast::Program> run() {
    auto program = std::make_unique<ast::Program>();
    std::string end;
    program->body = parse_body({}, &end);
    return program;
  }

 private:
  void expect_block_end() {
    if (cur().type != TokenType::kBlockEnd) {
      fail(cur(), "expected end of statement block, got " + describe(cur()));
    }
    advance();
  }

  // Statements until a block tag named in `ends`; consumes "{%" and that name and reports
  // which one ended the body. With no `ends`, runs to the end of the template.
  ast::Body parse_body(std::initializer_list<std::string_view> ends, std::string* found) {
    DepthGuard guard(this);
    ast::Body body;
    while (true) {
      const Token& t = cur();
      switch (t.type) {
        case TokenType::kText:
          body.push_back(std::make_unique<ast::Text>(t.line, t.text));
          advance();
          break;
        case TokenType::kVarBegin: {
          advance();
          ExprPtr e = parse_tuple(true, {});
          if (cur().type != TokenType::kVarEnd) {
            fail(cur(), "expected end of print statement, got " + describe(cur()));
          }
          advance();
          body.push_back(std::make_unique<ast::Output>(t.line, std::move(e)));
          break;
        }
        case TokenType::kBlockBegin: {
          const Token& name = look();
          for (std::string_view end : ends) {
            if (name.type == TokenType::kName && name.text == end) {
              advance();
              *found = advance().text;
              return body;
            }
          }
          advance();
          body.push_back(parse_statement(ends));
          break;
        }
        case TokenType::kEnd:
          if (ends.size() != 0) fail(t, "unexpected end of template, expected " + list(ends));
          return body;
        default:
          fail(t, "unexpected " + describe(t));
      }
    }
  }

  static std::string list(std::initializer_list<std::string_view> names) {
    std::string out;
    size_t i = 0;
    for (std::string_view n : names) {
      if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
      out += '\'';
      out += n;
      out += '\'';
      ++i;
    }
    return out;
  }

  StmtPtr parse_statement(std::initializer_list<std::string_view> open_ends) {
    const Token& t = cur();
    if (t.type != TokenType::kName) fail(t, "expected a statement name, got " + describe(t));
    std::string name = advance().text;
    int line = t.line;
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "call") return parse_call_block(line);
    if (name == "filter") return parse_filter_block(line);
    if (name == "with") return parse_with(line);
    if (name == "print") {
      auto out = std::make_unique<ast::Output>(line, parse_tuple(true, {}));
      expect_block_end();
      return out;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(t, "'" + name + "' outside of a loop");
      expect_block_end();
      return std::make_unique<ast::LoopControl>(line, name == "break");
    }
    if (name == "generation") {
      auto scope = std::make_unique<ast::Scope>(line);
      expect_block_end();
      std::string end;
      scope->body = parse_body({"endgeneration"}, &end);
      expect_block_end();
      return scope;
    }
    if (name == "include" || name == "extends" || name == "import" || name == "from" ||
        name == "block" || name == "autoescape") {
      fail(t, "the '" + name + "' tag is not supported");
    }
    std::string message = "Encountered unknown tag '" + name + "'.";
    if (open_ends.size() != 0) message += " Expected " + list(open_ends) + ".";
    fail(t, message);
  }

  StmtPtr parse_if(int line) {
    auto node = std::make_unique<ast::If>(line);
    ExprPtr cond = parse_tuple(false, {});
    expect_block_end();
    while (true) {
      std::string end;
      ast::Body body = parse_body({"elif", "else", "endif"}, &end);
      node->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_tuple(false, {});
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (end == "else") {
        node->otherwise = parse_body({"endif"}, &end);
        expect_block_end();
      }
      return node;
    }
  }

  StmtPtr parse_for(int line) {
    auto node = std::make_unique<ast::For>(line);
    node->target = parse_target(false);
    if (!skip_name("in")) fail(cur(), "expected 'in', got " + describe(cur()));
    node->iterable = parse_tuple(false, {"recursive"});
    if (skip_name("if")) node->filter = parse_expression(true);
    if (at_name("recursive")) fail(cur(), "recursive loops are not supported");
    expect_block_end();
    std::string end;
    ++loop_depth_;
    node->body = parse_body({"endfor", "else"}, &end);
    --loop_depth_;
    expect_block_end();
    if (end == "else") {
      node->otherwise = parse_body({"endfor"}, &end);
      expect_block_end();
    }
    return node;
  }

  // A name, names to unpack ("a, b" or "(a, b)"), or with `allow_attr` ns.attr.
  ast::Target parse_target(bool allow_attr) {
    ast::Target target;
    if (allow_attr && cur().type == TokenType::kName && look().type == TokenType::kOperator &&
        look().text == ".") {
      target.names.push_back(advance().text);
      advance();
      target.attr = expect_name();
      return target;
    }
    bool parens = skip_op("(");
    while (true) {
      target.names.push_back(expect_name());
      if (!skip_op(",")) break;
      target.unpack = true;
      if (cur().type != TokenType::kName) break;  // trailing comma
    }
    if (parens) {
      expect_op(")");
      target.unpack = true;
    }
    return target;
  }

  StmtPtr parse_set(int line) {
    ast::Target target = parse_target(true);
    if (skip_op("=")) {
      auto node = std::make_unique<ast::Set>(line);
      node->target = std::move(target);
      node->value = parse_tuple(true, {});
      expect_block_end();
      return node;
    }
    auto node = std::make_unique<ast::SetBlock>(line);
    if (target.unpack) fail(cur(), "a block set assigns one name");
    node->target = std::move(target);
    if (at_op("|")) node->filter = parse_filter_chain(nullptr, false);
    expect_block_end();
    std::string end;
    node->body = parse_body({"endset"}, &end);
    expect_block_end();
    return node;
  }

  // "(a, b=1, ...)" of a macro or call block.
  void parse_signature(ast::MacroDef* def) {
    expect_op("(");
    while (!at_op(")")) {
      if (!def->params.empty()) expect_op(",");
      if (at_op(")")) break;
      std::string name = expect_name();
      ExprPtr fallback;
      if (skip_op("=")) {
        fallback = parse_expression(true);
      } else {
        for (const auto& p : def->params) {
          if (p.second) fail(cur(), "non-default argument follows default argument");
        }
      }
      def->params.emplace_back(std::move(name), std::move(fallback));
    }
    expect_op(")");
  }

  void parse_macro_body(ast::MacroDef* def, std::string_view end_name) {
    int saved_loops = loop_depth_;
    loop_depth_ = 0;
    macros_.push_back(def);
    std::string end;
    def->body = parse_body({end_name}, &end);
    macros_.pop_back();
    loop_depth_ = saved_loops;
    expect_block_end();
  }

  StmtPtr parse_macro(int line) {
    auto node = std::make_unique<ast::Macro>(line);
    node->def.name = expect_name();
    parse_signature(&node->def);
    expect_block_end();
    parse_macro_body(&node->def, "endmacro");
    return node;
  }

  StmtPtr parse_call_block(int line) {
    auto node = std::make_unique<ast::CallBlock>(line);
    node->caller.name = "caller";
    if (at_op("(")) parse_signature(&node->caller);
    const Token& at = cur();
    node->call = parse_expression(true);
    if (node->call->kind != ast::ExprKind::kCall) fail(at, "expected call");
    expect_block_end();
    parse_macro_body(&node->caller, "endcall");
    return node;
  }

  StmtPtr parse_filter_block(int line) {
    auto node = std::make_unique<ast::FilterBlock>(line);
    node->filter = parse_filter_chain(nullptr, true);
    expect_block_end();
    std::string end;
    node->body = parse_body({"endfilter"}, &end);
    expect_block_end();
    return node;
  }

  StmtPtr parse_with(int line) {
    auto node = std::make_unique<ast::With>(line);
    while (cur().type != TokenType::kBlockEnd) {
      if (!node->assignments.empty()) expect_op(",");
      ast::Target target = parse_target(false);
      expect_op("=");
      node->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    expect_block_end();
    std::string end;
    node->body = parse_body({"endwith"}, &end);
    expect_block_end();
    return node;
  }

  int loop_depth_ = 0;
};

// Jinja compiles an unknown filter or test to a syntax error, except where it sits in an
// if-statement (condition or branches) or a conditional expression: there it only fails if
// it runs. Loop, macro, call, with and block-set bodies start afresh (Jinja's inner frames).
class UnknownNameCheck {
 public:
  void body(const ast::Body& stmts, bool soft) {
    for (const auto& s : stmts) stmt(*s, soft);
  }

 private:
  void stmt(const ast::Stmt& s, bool soft) {
    switch (s.kind) {
      case ast::StmtKind::kText:
      case ast::StmtKind::kBreak:
      case ast::StmtKind::kContinue:
        return;
      case ast::StmtKind::kOutput:
        return expr(static_cast<const ast::Output&>(s).expr.get(), soft);
      case ast::StmtKind::kIf:
        for (const auto& [cond, branch] : static_cast<const ast::If&>(s).branches) {
          expr(cond.get(), true);
          body(branch, true);
        }
        return body(static_cast<const ast::If&>(s).otherwise, true);
      case ast::StmtKind::kFor: {
        const auto& node = static_cast<const ast::For&>(s);
        expr(node.iterable.get(), soft);
        expr(node.filter.get(), false);
        body(node.body, false);
        return body(node.otherwise, false);
      }
      case ast::StmtKind::kSet:
        return expr(static_cast<const ast::Set&>(s).value.get(), soft);
      case ast::StmtKind::kSetBlock:
        expr(static_cast<const ast::SetBlock&>(s).filter.get(), false);
        return body(static_cast<const ast::SetBlock&>(s).body, false);
      case ast::StmtKind::kMacro:
        return macro(static_cast<const ast::Macro&>(s).def);
      case ast::StmtKind::kCallBlock:
        macro(static_cast<const ast::CallBlock&>(s).caller);
        return expr(static_cast<const ast::CallBlock&>(s).call.get(), soft);
      case ast::StmtKind::kFilterBlock:
        expr(static_cast<const ast::FilterBlock&>(s).filter.get(), false);
        return body(static_cast<const ast::FilterBlock&>(s).body, false);
      case ast::StmtKind::kWith:
        for (const auto& [target, value] : static_cast<const ast::With&>(s).assignments) {
          expr(value.get(), soft);
        }
        return body(static_cast<const ast::With&>(s).body, false);
      case ast::StmtKind::kScope:
        return body(static_cast<const ast::Scope&>(s).body, false);
    }
  }

  void macro(const ast::MacroDef& def) {
    for (const auto& [name, fallback] : def.params) expr(fallback.get(), false);
    body(def.body, false);
  }

  void args(const std::vector<ast::Arg>& list, bool soft) {
    for (const auto& a : list) expr(a.value.get(), soft);
  }

  void expr(const ast::Expr* e, bool soft) {
    if (e == nullptr) return;
    switch (e->kind) {
      case ast::ExprKind::kLiteral:
      case ast::ExprKind::kName:
        return;
      case ast::ExprKind::kList:
        for (const auto& item : static_cast<const ast::ListExpr*>(e)->items) expr(item.get(), soft);
        return;
      case ast::ExprKind::kDict:
        for (const auto& [k, v] : static_cast<const ast::DictExpr*>(e)->items) {
          expr(k.get(), soft);
          expr(v.get(), soft);
        }
        return;
      case ast::ExprKind::kGetAttr:
        return expr(static_cast<const ast::GetAttr*>(e)->object.get(), soft);
      case ast::ExprKind::kGetItem:
        expr(static_cast<const ast::GetItem*>(e)->object.get(), soft);
        return expr(static_cast<const ast::GetItem*>(e)->index.get(), soft);
      case ast::ExprKind::kSlice: {
        const auto* n = static_cast<const ast::Slice*>(e);
        for (const ast::Expr* part :
             {n->object.get(), n->start.get(), n->stop.get(), n->step.get()}) {
          expr(part, soft);
        }
        return;
      }
      case ast::ExprKind::kCall:
        expr(static_cast<const ast::Call*>(e)->callee.get(), soft);
        return args(static_cast<const ast::Call*>(e)->args, soft);
      case ast::ExprKind::kFilter: {
        const auto* n = static_cast<const ast::Filter*>(e);
        if (n->fn == nullptr && !soft) unknown("filter", n->name, n->line, n->column);
        expr(n->input.get(), soft);
        return args(n->args, soft);
      }
      case ast::ExprKind::kTest: {
        const auto* n = static_cast<const ast::Test*>(e);
        if (n->fn == nullptr && !soft) unknown("test", n->name, n->line, n->column);
        expr(n->input.get(), soft);
        return args(n->args, soft);
      }
      case ast::ExprKind::kUnary:
        return expr(static_cast<const ast::Unary*>(e)->operand.get(), soft);
      case ast::ExprKind::kBinary:
        expr(static_cast<const ast::Binary*>(e)->left.get(), soft);
        return expr(static_cast<const ast::Binary*>(e)->right.get(), soft);
      case ast::ExprKind::kCompare:
        expr(static_cast<const ast::Compare*>(e)->first.get(), soft);
        for (const auto& [op, operand] : static_cast<const ast::Compare*>(e)->rest) {
          expr(operand.get(), soft);
        }
        return;
      case ast::ExprKind::kConcat:
        for (const auto& part : static_cast<const ast::Concat*>(e)->parts) expr(part.get(), soft);
        return;
      case ast::ExprKind::kCondition: {
        const auto* n = static_cast<const ast::Condition*>(e);
        expr(n->then.get(), true);
        expr(n->cond.get(), true);
        return expr(n->otherwise.get(), true);
      }
    }
  }

  [[noreturn]] static void unknown(const char* what, const std::string& name, int line,
                                   int column) {
    throw TemplateError(std::string("No ") + what + " named '" + name + "'.",
                        TemplateError::Kind::kSyntax, line, column);
  }
};

}  // namespace

std::unique_ptr<ast::Program> parse(std::vector<Token> tokens) {
  std::unique_ptr<ast::Program> program = Parser(std::move(tokens)).run();
  UnknownNameCheck().body(program->body, false);
  return program;
}

}  // namespace sy::jinja
