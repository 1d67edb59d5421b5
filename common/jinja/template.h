// A Jinja template, parsed once and rendered many times (concurrently too: render() is
// const and keeps its state per call). Semantics are those of Python Jinja2 as Hugging Face
// transformers configures it for chat templates: ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loop controls, the globals raise_exception() and
// strftime_now(), and json.dumps-style tojson.
//
//   sy::jinja::Template t("{% for m in messages %}{{ m.role }}{% endfor %}");
//   std::string text = t.render(nlohmann::ordered_json{{"messages", messages}});
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/jinja/error.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/value.h"

namespace sy::jinja {

struct Options {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
  Limits limits;
};

class Template {
 public:
  // Throws TemplateError (kSyntax) with line and column when the source does not parse or
  // names an unknown filter or test.
  explicit Template(std::string_view source, Options options = {});

  // Renders with the given variables (a dict of name -> value). Throws TemplateError.
  std::string render(const Dict& variables) const;
  // `variables` must be a JSON object.
  std::string render(const nlohmann::ordered_json& variables) const;

 private:
  std::shared_ptr<const ast::Program> program_;
  Options options_;
};

}  // namespace sy::jinja
