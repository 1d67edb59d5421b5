// Command-line flags of the form `--name value` and `--flag`, for Switchyard's programs and
// their subcommands. Unknown flags and missing values are errors, reported by name.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace sy::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `valued` flags take a value; `switches` take none. argv[0..] excludes the subcommand.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& valued, const std::set<std::string>& switches);

  bool has(const std::string& name) const { return values_.count(name) > 0 || switches_.count(name) > 0; }
  std::string get(const std::string& name) const;  // throws UsageError when absent
  std::string get_or(const std::string& name, const std::string& fallback) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

// Parses "1,2,3" into ids; throws UsageError on anything else.
std::vector<int32_t> parse_id_list(const std::string& s);

}  // namespace sy::cli
