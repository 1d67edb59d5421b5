// The allowed next tokens of a constrained request: the grammar's state walked against
// the vocabulary trie (vocab_index.h), so a step visits only the branches the grammar
// accepts instead of all 150K tokens; inside a JSON string (or free reasoning) the plain
// tokens are taken in one pass and only the others walked. Stop ids are allowed only
// where the grammar accepts (after a complete call).
#pragma once

#include <cstdint>
#include <vector>

#include "common/constrain/tool_grammar.h"
#include "common/constrain/vocab_index.h"

namespace sy::constrain {

class TokenMasker {
 public:
  explicit TokenMasker(const VocabIndex& vocab);

  // Replaces `allowed` with the ids that may follow state `s` (each once, unordered).
  void allowed_tokens(const ToolGrammar& g, const GrammarState& s, std::vector<int32_t>& allowed);

  // Advances `s` by token `id`'s bytes; false when the grammar refuses it (a stop id is
  // refused too: it ends the turn, it is not text).
  bool advance(const ToolGrammar& g, GrammarState& s, int32_t id) const;

  // Nodes visited by the last allowed_tokens() (bench/ reports it).
  int64_t last_nodes_visited() const { return visited_; }

 private:
  void walk(const ToolGrammar& g, const VocabTrie& t, int32_t node, size_t depth, std::vector<int32_t>& allowed);

  const VocabIndex& vocab_;
  std::vector<GrammarState> states_;  // states_[d]: the state after d bytes of the current branch
  int64_t visited_ = 0;
};

}  // namespace sy::constrain
