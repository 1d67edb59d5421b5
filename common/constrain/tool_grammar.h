// The grammar of a constrained assistant turn: optional reasoning, then one tool call
// (or, with parallel calls, one or more) to an offered function whose arguments match its
// schema, in the template's format:
//   hermes:      <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>  ("\n" between calls)
//   llama3_json: {"name": "f", "parameters": {...}}                           (";" between calls)
// Reasoning: "none"; "optional" (the turn may open with <think>…</think>, free text); "open"
// (the prompt ended inside <think>: free text until </think>). Up to 4 spaces or newlines
// may follow </think>. The end of the turn (a stop token) is allowed only after a call.
//
// Compiled once per request from its spec (tool_constraint.h), immutable, shared by the
// request's GrammarState; advance() is the byte-level transition.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/constrain/json_automaton.h"

namespace sy::constrain {

struct GrammarState {
  enum Phase : uint8_t { kStart, kReasoning, kGap, kCallOpen, kName, kArgsKey, kArgs, kCallClose, kAfterCall, kSeparator };
  Phase phase = kStart;
  int32_t pos = 0;                  // bytes of the current literal matched (reasoning: of "</think>")
  int32_t lo = 0, hi = 0, len = 0;  // kStart / kName: candidates matched so far
  int32_t tool = -1;                // the call being written, an index into ToolGrammar::tools()
  int32_t calls = 0;                // calls completed
  JsonStack json;                   // kArgs

  void copy_from(const GrammarState& o) {
    phase = o.phase;
    pos = o.pos;
    lo = o.lo;
    hi = o.hi;
    len = o.len;
    tool = o.tool;
    calls = o.calls;
    json.copy_from(o.json);
  }
};

class ToolGrammar {
 public:
  enum class Format : uint8_t { kHermes, kLlama3Json };
  enum class Reasoning : uint8_t { kNone, kOptional, kOpen };
  struct Tool {
    std::string name;
    int32_t root = 0;  // schema node of its arguments
  };

  // From a spec {"format", "tools": [{"name", "parameters"}], "parallel", "reasoning"};
  // null with `error` naming what is refused (an unsupported schema feature, a bad name).
  static std::shared_ptr<const ToolGrammar> compile(const nlohmann::json& spec, std::string& error);

  GrammarState initial() const;
  // Feeds one byte of generated text; false when the turn cannot continue with it.
  bool advance(GrammarState& s, uint8_t c) const;
  // The turn may end here (a stop token is allowed).
  bool accepting(const GrammarState& s) const { return s.phase == GrammarState::kAfterCall; }
  // True when the state is inside a JSON string between characters (the mask's fast path).
  bool in_plain_string(const GrammarState& s) const { return s.phase == GrammarState::kArgs && s.json.in_plain_string(); }
  bool in_free_reasoning(const GrammarState& s) const { return s.phase == GrammarState::kReasoning && s.pos == 0; }
  // Code points the current string may still take, -1 for no limit (in_plain_string only).
  int64_t string_room(const GrammarState& s) const { return s.json.string_room(schemas_); }

  const std::vector<Tool>& tools() const { return tools_; }  // sorted by name
  const SchemaGraph& schemas() const { return schemas_; }

 private:
  bool advance_literal(GrammarState& s, const std::string& lit, uint8_t c, GrammarState::Phase next) const;
  void enter(GrammarState& s, GrammarState::Phase p) const;

  Format format_ = Format::kHermes;
  Reasoning reasoning_ = Reasoning::kNone;
  bool parallel_ = true;
  std::vector<Tool> tools_;
  std::vector<std::string> names_;    // tools_' names
  std::vector<std::string> openers_;  // kStart with optional reasoning: "<think>" and call_open_, sorted
  SchemaGraph schemas_;
  std::string call_open_, args_key_, call_close_, separator_;
};

}  // namespace sy::constrain
