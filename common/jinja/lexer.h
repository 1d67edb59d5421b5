// Splits a template into text and the tokens inside {{ }} and {% %}, applying Jinja's
// whitespace rules as it goes: `-` on a tag strips whitespace beside it, `+` keeps it,
// lstrip_blocks drops the indentation before a block tag, trim_blocks the newline after one.
// Comments are dropped and {% raw %} bodies come out as text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sy::jinja {

enum class TokenType {
  kText,        // template text outside tags (whitespace rules applied)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,    // text holds the decoded value
  kInteger,   // int_value
  kFloat,     // float_value
  kOperator,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { }
  kEnd,       // end of the template
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int column = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError (kSyntax) with the line and column of the problem.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace sy::jinja
