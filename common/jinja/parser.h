// Builds the statement and expression tree from tokens, following Jinja's grammar and
// operator precedence (condition < or < and < not < comparisons < + - < ~ < * / // % < **
// < unary < postfix, filters and tests).
#pragma once

#include <memory>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/lexer.h"

namespace sy::jinja {

// Deepest nesting of expressions and blocks the parser accepts; deeper input is a syntax
// error rather than a stack overflow.
inline constexpr int kMaxParseDepth = 200;

// Throws TemplateError (kSyntax) with the line and column of the offending token.
std::unique_ptr<ast::Program> parse(std::vector<Token> tokens);

}  // namespace sy::jinja
