// Python's operators on values: arithmetic with int/float promotion and floor semantics,
// str and list concatenation and repetition, %-formatting, ordering and `in`. Type errors
// carry Python's wording ("unsupported operand type(s) for -: 'str' and 'int'").
#pragma once

#include <cstddef>

#include "common/jinja/ast.h"
#include "common/jinja/value.h"

namespace sy::jinja {

// Arithmetic operators (not and/or). `max_bytes` bounds strings and lists built by
// repetition and concatenation.
Value binary_op(ast::BinaryOp op, const Value& a, const Value& b, size_t max_bytes);
Value negate(const Value& v);
Value unary_plus(const Value& v);

// Comparison operators, including `in` and `not in`.
bool compare(ast::CompareOp op, const Value& a, const Value& b);
// Python's ordering: -1, 0 or 1; TypeError for values Python cannot order.
int py_order(const Value& a, const Value& b, const char* op = "<");
// Python's `item in container`.
bool contains(const Value& container, const Value& item);

// "fmt % args" for a str on the left.
std::string percent_format(const std::string& fmt, const Value& args);

// Throws the error an undefined value raises when used as an operand (its hint).
[[noreturn]] void raise_undefined(const Value& v);

}  // namespace sy::jinja
