#include "common/jinja/template.h"

#include "common/jinja/lexer.h"
#include "common/jinja/parser.h"

namespace sy::jinja {

Template::Template(std::string_view source, Options options) : options_(options) {
  LexerOptions lex;
  lex.trim_blocks = options.trim_blocks;
  lex.lstrip_blocks = options.lstrip_blocks;
  lex.keep_trailing_newline = options.keep_trailing_newline;
  program_ = parse(tokenize(source, lex));
}

std::string Template::render(const Dict& variables) const {
  Interpreter interpreter(*program_, options_.limits);
  return interpreter.render(variables);
}

std::string Template::render(const nlohmann::ordered_json& variables) const {
  if (!variables.is_object()) throw TemplateError("template variables must be a JSON object");
  Value v = Value::from_json(variables);
  return render(v.as_dict());
}

}  // namespace sy::jinja
