#include "common/cli/args.h"

#include <charconv>
#include <limits>

namespace sy::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& valued, const std::set<std::string>& switches) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + a + "'");
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (switches.count(name)) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      switches_.insert(name);
    } else if (valued.count(name)) {
      if (inline_value) {
        values_[name] = *inline_value;
      } else {
        if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
        values_[name] = argv[++i];
      }
    } else {
      throw UsageError("unknown option --" + name);
    }
  }
}

std::string Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw UsageError("--" + name + " is required");
  return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  int64_t v = 0;
  const auto& s = it->second;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) throw UsageError("--" + name + " needs an integer, got '" + s + "'");
  return v;
}

double Args::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    double v = std::stod(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing");
    return v;
  } catch (const std::exception&) {
    throw UsageError("--" + name + " needs a number, got '" + it->second + "'");
  }
}

std::vector<int32_t> parse_id_list(const std::string& s) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + end, v);
    if (ec != std::errc() || p != s.data() + end || v < 0 || v > std::numeric_limits<int32_t>::max())
      throw UsageError("token ids must be a comma-separated list of non-negative integers, got '" + s + "'");
    ids.push_back(static_cast<int32_t>(v));
    pos = end + 1;
  }
  return ids;
}

}  // namespace sy::cli
