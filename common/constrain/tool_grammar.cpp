#include "common/constrain/tool_grammar.h"

#include <algorithm>

namespace sy::constrain {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr int kMaxGap = 4;

bool plain_name(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == '"' || c == '\\') return false;
  return true;
}

}  // namespace

std::shared_ptr<const ToolGrammar> ToolGrammar::compile(const nlohmann::json& spec, std::string& error) {
  auto g = std::make_shared<ToolGrammar>();
  const std::string format = spec.value("format", "");
  if (format == "hermes") {
    g->format_ = Format::kHermes;
    g->call_open_ = "<tool_call>\n{\"name\": \"";
    g->args_key_ = ", \"arguments\": ";
    g->call_close_ = "}\n</tool_call>";
    g->separator_ = "\n";
  } else if (format == "llama3_json") {
    g->format_ = Format::kLlama3Json;
    g->call_open_ = "{\"name\": \"";
    g->args_key_ = ", \"parameters\": ";
    g->call_close_ = "}";
    g->separator_ = ";";
  } else {
    error = "unknown tool-call format '" + format + "'";
    return nullptr;
  }
  const std::string reasoning = spec.value("reasoning", "none");
  g->reasoning_ = reasoning == "optional" ? Reasoning::kOptional : reasoning == "open" ? Reasoning::kOpen : Reasoning::kNone;
  g->parallel_ = spec.value("parallel", true);
  const auto tools = spec.find("tools");
  if (tools == spec.end() || !tools->is_array() || tools->empty()) {
    error = "no tools to call";
    return nullptr;
  }
  for (size_t i = 0; i < tools->size(); ++i) {
    const nlohmann::json& t = (*tools)[i];
    const std::string where = "tools[" + std::to_string(t.value("index", i)) + "].function";
    const std::string name = t.value("name", "");
    if (!plain_name(name)) {
      error = where + ".name: names with quotes, backslashes or control characters cannot be constrained";
      return nullptr;
    }
    const nlohmann::json params = t.contains("parameters") ? t["parameters"] : nlohmann::json{{"type", "object"}};
    if (!params.is_object() || params.value("type", nlohmann::json()) != "object") {
      error = where + ".parameters: the arguments must be a schema of type \"object\"";
      return nullptr;
    }
    auto root = compile_schema(params, where + ".parameters", g->schemas_, error);
    if (!root) return nullptr;
    g->tools_.push_back({name, *root});
  }
  std::sort(g->tools_.begin(), g->tools_.end(), [](const Tool& a, const Tool& b) { return a.name < b.name; });
  for (const Tool& t : g->tools_) g->names_.push_back(t.name);
  g->openers_ = {std::string(kThinkOpen), g->call_open_};
  std::sort(g->openers_.begin(), g->openers_.end());
  return g;
}

GrammarState ToolGrammar::initial() const {
  GrammarState s;
  switch (reasoning_) {
    case Reasoning::kNone: enter(s, GrammarState::kCallOpen); break;
    case Reasoning::kOptional: enter(s, GrammarState::kStart); break;
    case Reasoning::kOpen: enter(s, GrammarState::kReasoning); break;
  }
  return s;
}

void ToolGrammar::enter(GrammarState& s, GrammarState::Phase p) const {
  s.phase = p;
  s.pos = 0;
  s.len = 0;
  s.lo = 0;
  if (p == GrammarState::kStart) s.hi = static_cast<int32_t>(openers_.size());
  if (p == GrammarState::kName) s.hi = static_cast<int32_t>(names_.size());
  if (p == GrammarState::kArgs) s.json.start(tools_[static_cast<size_t>(s.tool)].root);
}

bool ToolGrammar::advance_literal(GrammarState& s, const std::string& lit, uint8_t c, GrammarState::Phase next) const {
  if (static_cast<uint8_t>(lit[static_cast<size_t>(s.pos)]) != c) return false;
  if (++s.pos == static_cast<int32_t>(lit.size())) enter(s, next);
  return true;
}

bool ToolGrammar::advance(GrammarState& s, uint8_t c) const {
  // Narrows s.lo/hi over `v` (sorted, sharing s.len bytes) to those continuing with c.
  auto narrow = [&](const std::vector<std::string>& v) {
    int32_t lo = -1, hi = -1;
    for (int32_t i = s.lo; i < s.hi; ++i) {
      const std::string& x = v[static_cast<size_t>(i)];
      if (x.size() > static_cast<size_t>(s.len) && static_cast<uint8_t>(x[static_cast<size_t>(s.len)]) == c) {
        if (lo < 0) lo = i;
        hi = i + 1;
      }
    }
    if (lo < 0) return false;
    s.lo = lo;
    s.hi = hi;
    ++s.len;
    return true;
  };
  switch (s.phase) {
    case GrammarState::kStart: {
      if (!narrow(openers_)) return false;
      const std::string& only = openers_[static_cast<size_t>(s.lo)];
      if (s.hi - s.lo == 1 && only.size() == static_cast<size_t>(s.len))
        enter(s, only == kThinkOpen ? GrammarState::kReasoning : GrammarState::kName);
      return true;
    }
    case GrammarState::kReasoning:
      // Free text; a mismatch restarts the match (no proper prefix of "</think>" recurs in it).
      if (c == static_cast<uint8_t>(kThinkClose[static_cast<size_t>(s.pos)])) {
        if (++s.pos == static_cast<int32_t>(kThinkClose.size())) enter(s, GrammarState::kGap);
      } else {
        s.pos = c == '<' ? 1 : 0;
      }
      return true;
    case GrammarState::kGap:
      if ((c == ' ' || c == '\n') && s.pos < kMaxGap) return ++s.pos, true;
      enter(s, GrammarState::kCallOpen);
      return advance_literal(s, call_open_, c, GrammarState::kName);
    case GrammarState::kCallOpen:
      return advance_literal(s, call_open_, c, GrammarState::kName);
    case GrammarState::kName:
      if (c == '"') {
        if (names_[static_cast<size_t>(s.lo)].size() != static_cast<size_t>(s.len)) return false;
        s.tool = s.lo;
        enter(s, GrammarState::kArgsKey);
        return true;
      }
      return narrow(names_);
    case GrammarState::kArgsKey:
      return advance_literal(s, args_key_, c, GrammarState::kArgs);
    case GrammarState::kArgs:
      if (!json_feed(schemas_, s.json, c)) return false;
      if (s.json.empty()) enter(s, GrammarState::kCallClose);
      return true;
    case GrammarState::kCallClose:
      if (!advance_literal(s, call_close_, c, GrammarState::kAfterCall)) return false;
      if (s.phase == GrammarState::kAfterCall) ++s.calls;
      return true;
    case GrammarState::kAfterCall:
      if (!parallel_) return false;
      enter(s, GrammarState::kSeparator);
      return advance_literal(s, separator_, c, GrammarState::kCallOpen);
    case GrammarState::kSeparator:
      return advance_literal(s, separator_, c, GrammarState::kCallOpen);
  }
  return false;
}

}  // namespace sy::constrain
