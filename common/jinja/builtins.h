// The builtin filters, tests, globals and methods of str/list/dict, looked up by name.
// Filters and tests are resolved when a template is parsed, so an unknown one is a syntax
// error, as Jinja reports it when it compiles a template.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/value.h"

namespace sy::jinja {

FilterFn find_filter(std::string_view name);  // nullptr when unknown
TestFn find_test(std::string_view name);      // nullptr when unknown
// range, namespace, dict, joiner, cycler, raise_exception, strftime_now; nullptr when unknown.
const Value* find_global(std::string_view name);

// A method of a str, list or dict bound to `self` (a callable value); nullopt when the
// object has no such method. A method that would mutate a list or dict comes back as an
// undefined that raises the sandbox's error when called, as in transformers.
std::optional<Value> find_method(const Value& self, std::string_view name);

// Binds a builtin's arguments to named parameters, Python-style: positional first, then by
// keyword; missing ones take their default (an undefined default means "required").
struct Param {
  const char* name;
  Value fallback;
};
std::vector<Value> bind_args(const char* function, const CallArgs& args,
                             const std::vector<Param>& params);

// Python iteration: a list's or tuple's items, a dict's keys, a string's characters,
// nothing for undefined; TemplateError for anything else.
std::vector<Value> iterate(const Value& v);

// Jinja's attribute/item lookup used by filters such as map(attribute='a.b'): dots walk
// into nested values, integer parts index lists.
Value lookup_attribute_path(Interpreter& in, const Value& v, std::string_view path);

}  // namespace sy::jinja
