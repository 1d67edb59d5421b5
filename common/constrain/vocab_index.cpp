#include "common/constrain/vocab_index.h"

#include <algorithm>
#include <numeric>

#include "common/tokenizer/tokenizer.h"

namespace sy::constrain {
namespace {

// A trie of `ids` (their bytes sorted, built in one pass with a stack of open nodes).
VocabTrie build_trie(const std::vector<std::string>& bytes, std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)] || (bytes[static_cast<size_t>(a)] == bytes[static_cast<size_t>(b)] && a < b);
  });
  VocabTrie t;
  std::vector<int32_t> node_of_id(ids.size());
  // Node 0 is the root (no byte).
  t.byte.push_back(0);
  t.first_child.push_back(-1);
  t.next_sibling.push_back(-1);
  std::vector<int32_t> last_child(1, -1);
  std::vector<int32_t> path = {0};  // path[d]: the node at depth d of the previous token
  const std::string* prev = nullptr;
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string& s = bytes[static_cast<size_t>(ids[k])];
    size_t common = 0;
    if (prev)
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    path.resize(common + 1);
    for (size_t d = common; d < s.size(); ++d) {
      const auto n = static_cast<int32_t>(t.byte.size());
      t.byte.push_back(static_cast<uint8_t>(s[d]));
      t.first_child.push_back(-1);
      t.next_sibling.push_back(-1);
      last_child.push_back(-1);
      const int32_t parent = path.back();
      if (last_child[static_cast<size_t>(parent)] < 0) t.first_child[static_cast<size_t>(parent)] = n;
      else t.next_sibling[static_cast<size_t>(last_child[static_cast<size_t>(parent)])] = n;
      last_child[static_cast<size_t>(parent)] = n;
      path.push_back(n);
    }
    node_of_id[k] = path.back();
    prev = &s;
  }
  // Ids grouped by node: counting sort.
  t.ids_begin.assign(t.byte.size() + 1, 0);
  for (int32_t n : node_of_id) ++t.ids_begin[static_cast<size_t>(n) + 1];
  std::partial_sum(t.ids_begin.begin(), t.ids_begin.end(), t.ids_begin.begin());
  t.ids.resize(ids.size());
  std::vector<int32_t> fill(t.ids_begin.begin(), t.ids_begin.end() - 1);
  for (size_t k = 0; k < ids.size(); ++k) t.ids[static_cast<size_t>(fill[static_cast<size_t>(node_of_id[k])]++)] = ids[k];
  return t;
}

}  // namespace

int32_t plain_string_code_points(const std::string& s) {
  int32_t cps = 0;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') return -1;
    size_t n = 1;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) n = 1;
    else if (c < 0xC2 || c > 0xF4) return -1;
    else if (c < 0xE0) n = 2;
    else if (c < 0xF0) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (i + n > s.size()) return -1;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return -1;
    }
    i += n;
    ++cps;
  }
  return cps;
}

VocabIndex::VocabIndex(const Tokenizer& tok) {
  const int32_t n = tok.vocab_size();
  bytes_.resize(static_cast<size_t>(n));
  text_.assign(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    tok.append_token_bytes(id, false, bytes_[static_cast<size_t>(id)]);
    text_[static_cast<size_t>(id)] = !tok.is_special(id) && !bytes_[static_cast<size_t>(id)].empty();
  }
  stop_ids_ = tok.stop_ids();
  for (int32_t id : stop_ids_)
    if (id >= 0 && id < n) text_[static_cast<size_t>(id)] = 0;
  build();
}

VocabIndex::VocabIndex(const std::vector<std::string>& token_bytes, const std::vector<bool>& special, std::vector<int32_t> stop_ids)
    : bytes_(token_bytes), stop_ids_(std::move(stop_ids)) {
  text_.assign(bytes_.size(), 0);
  for (size_t i = 0; i < bytes_.size(); ++i) text_[i] = !(i < special.size() && special[i]) && !bytes_[i].empty();
  for (int32_t id : stop_ids_)
    if (id >= 0 && id < vocab_size()) text_[static_cast<size_t>(id)] = 0;
  build();
}

bool VocabIndex::is_stop(int32_t id) const { return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end(); }

void VocabIndex::build() {
  std::vector<int32_t> all, s_rest, r_rest;
  std::vector<std::pair<int32_t, int32_t>> plain;  // (code points, id)
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (!is_text(id)) continue;
    const std::string& b = bytes(id);
    all.push_back(id);
    const int32_t cps = plain_string_code_points(b);
    if (cps > 0) plain.emplace_back(cps, id);
    else s_rest.push_back(id);
    if (b.find('<') == std::string::npos) reasoning_plain_.push_back(id);
    else r_rest.push_back(id);
  }
  std::sort(plain.begin(), plain.end());
  for (const auto& [cps, id] : plain) {
    string_plain_.push_back(id);
    string_plain_cps_.push_back(cps);
  }
  all_ = build_trie(bytes_, std::move(all));
  string_rest_ = build_trie(bytes_, std::move(s_rest));
  reasoning_rest_ = build_trie(bytes_, std::move(r_rest));
}

}  // namespace sy::constrain
