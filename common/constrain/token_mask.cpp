#include "common/constrain/token_mask.h"

#include <algorithm>

namespace sy::constrain {

TokenMasker::TokenMasker(const VocabIndex& vocab) : vocab_(vocab) {
  size_t longest = 0;
  for (int32_t id = 0; id < vocab.vocab_size(); ++id) longest = std::max(longest, vocab.bytes(id).size());
  states_.resize(longest + 2);  // never resized during a walk, which holds references into it
}

void TokenMasker::walk(const ToolGrammar& g, const VocabTrie& t, int32_t node, size_t depth, std::vector<int32_t>& allowed) {
  for (int32_t c = t.first_child[static_cast<size_t>(node)]; c >= 0; c = t.next_sibling[static_cast<size_t>(c)]) {
    ++visited_;
    GrammarState& next = states_[depth + 1];
    next.copy_from(states_[depth]);
    if (!g.advance(next, t.byte[static_cast<size_t>(c)])) continue;
    for (int32_t k = t.ids_begin[static_cast<size_t>(c)]; k < t.ids_begin[static_cast<size_t>(c) + 1]; ++k)
      allowed.push_back(t.ids[static_cast<size_t>(k)]);
    if (t.first_child[static_cast<size_t>(c)] >= 0) walk(g, t, c, depth + 1, allowed);
  }
}

void TokenMasker::allowed_tokens(const ToolGrammar& g, const GrammarState& s, std::vector<int32_t>& allowed) {
  allowed.clear();
  visited_ = 0;
  states_[0].copy_from(s);
  if (g.in_plain_string(s)) {
    const int64_t room = g.string_room(s);
    const auto& ids = vocab_.string_plain();
    const auto& cps = vocab_.string_plain_cps();
    const size_t n = room < 0 ? ids.size()
                              : static_cast<size_t>(std::upper_bound(cps.begin(), cps.end(), room) - cps.begin());
    allowed.insert(allowed.end(), ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
    walk(g, vocab_.string_rest(), 0, 0, allowed);
  } else if (g.in_free_reasoning(s)) {
    allowed.insert(allowed.end(), vocab_.reasoning_plain().begin(), vocab_.reasoning_plain().end());
    walk(g, vocab_.reasoning_rest(), 0, 0, allowed);
  } else {
    walk(g, vocab_.all(), 0, 0, allowed);
  }
  if (g.accepting(s))
    for (int32_t id : vocab_.stop_ids())
      if (id >= 0 && id < vocab_.vocab_size()) allowed.push_back(id);
}

bool TokenMasker::advance(const ToolGrammar& g, GrammarState& s, int32_t id) const {
  if (id < 0 || id >= vocab_.vocab_size() || !vocab_.is_text(id)) return false;
  for (char c : vocab_.bytes(id))
    if (!g.advance(s, static_cast<uint8_t>(c))) return false;
  return true;
}

}  // namespace sy::constrain
