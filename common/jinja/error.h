// The one exception the Jinja interpreter raises: syntax errors (at construction), render
// errors (undefined values used, type errors, limits hit) and raise_exception() calls from
// the template itself. Nothing in common/jinja/ crashes or hangs on bad input; it throws.
#pragma once

#include <stdexcept>
#include <string>

namespace sy::jinja {

class TemplateError : public std::runtime_error {
 public:
  enum class Kind {
    kSyntax,  // the template does not parse; line and column are set
    kRender,  // a runtime error (type error, undefined value, limit hit); line is set
    kRaised,  // the template called raise_exception(message)
  };

  // A render error without a position yet; the interpreter adds the line it was at.
  explicit TemplateError(std::string message, Kind kind = Kind::kRender, int line = 0,
                         int column = 0)
      : std::runtime_error(format(message, kind, line, column)),
        message_(std::move(message)),
        kind_(kind),
        line_(line),
        column_(column) {}

  Kind kind() const { return kind_; }
  // The message without the position prefix (for raise_exception: exactly its argument).
  const std::string& message() const { return message_; }
  int line() const { return line_; }      // 1-based; 0 when unknown
  int column() const { return column_; }  // 1-based; 0 when unknown

  TemplateError with_line(int line) const { return TemplateError(message_, kind_, line, column_); }

 private:
  static std::string format(const std::string& message, Kind kind, int line, int column) {
    if (kind == Kind::kRaised) return message;
    std::string out = kind == Kind::kSyntax ? "template syntax error" : "template error";
    if (line > 0) out += " at line " + std::to_string(line);
    if (column > 0) out += ", column " + std::to_string(column);
    return out + ": " + message;
  }

  std::string message_;
  Kind kind_;
  int line_;
  int column_;
};

}  // namespace sy::jinja
