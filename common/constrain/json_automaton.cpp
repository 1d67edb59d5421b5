#include "common/constrain/json_automaton.h"

#include <string>
#include <vector>

namespace sy::constrain {
namespace {

constexpr int kMaxIntDigits = 15, kMaxFracDigits = 15, kMaxExpDigits = 2;  // |value| < 1e115: a double

enum ObjectPhase : uint8_t { kObjOpen, kObjKey, kObjColon, kObjColonSpace, kObjAfterValue, kObjComma, kObjCommaSpace };
enum ArrayPhase : uint8_t { kArrOpen, kArrAfterValue, kArrSep, kArrSepSpace };
enum NumberPhase : uint8_t { kNumSign, kNumZero, kNumInt, kNumFracStart, kNumFrac, kNumExpStart, kNumExpSign, kNumExp };

bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Narrows candidates [lo, hi) of `v` (sorted, sharing their first `len` bytes) to those
// whose byte at `len` is c and for which `usable` holds; false when none is left.
template <class Usable>
bool narrow(const std::vector<std::string>& v, JsonFrame& f, uint8_t c, Usable usable) {
  int32_t lo = -1, hi = -1;
  for (int32_t i = f.lo; i < f.hi; ++i) {
    const std::string& s = v[static_cast<size_t>(i)];
    if (s.size() > static_cast<size_t>(f.len) && static_cast<uint8_t>(s[static_cast<size_t>(f.len)]) == c) {
      if (lo < 0) lo = i;
      hi = i + 1;
    }
  }
  if (lo < 0) return false;
  bool any = false;
  for (int32_t i = lo; i < hi && !any; ++i) any = usable(i);
  if (!any) return false;
  f.lo = lo;
  f.hi = hi;
  ++f.len;
  return true;
}

bool all_seen(const SchemaNode& n, uint64_t seen) {
  const size_t k = n.properties.size();
  const uint64_t all = k >= 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1;
  return (seen & all) == all;
}

// The first byte of a value of node `n` starts a frame there; false when no value of n
// starts with c.
bool begin_value(const SchemaGraph& g, JsonFrame& f, uint8_t c) {
  const SchemaNode& n = g.nodes[static_cast<size_t>(f.node)];
  switch (n.kind) {
    case NodeKind::kObject:
      if (c != '{') return false;
      f.kind = JsonFrame::kObject;
      f.phase = kObjOpen;
      f.seen = 0;
      return true;
    case NodeKind::kArray:
      if (c != '[') return false;
      f.kind = JsonFrame::kArray;
      f.phase = kArrOpen;
      f.count = 0;
      return true;
    case NodeKind::kString:
      if (c != '"') return false;
      f.kind = JsonFrame::kString;
      f.esc = f.need = 0;
      f.count = 0;
      return true;
    case NodeKind::kNumber:
    case NodeKind::kInteger:
      f.kind = JsonFrame::kNumber;
      f.digits = 0;
      if (c == '-') return f.phase = kNumSign, true;
      if (c == '0') return f.phase = kNumZero, true;
      if (c >= '1' && c <= '9') return f.phase = kNumInt, f.digits = 1, true;
      return false;
    case NodeKind::kLiterals:
      f.kind = JsonFrame::kLiterals;
      f.lo = 0;
      f.hi = static_cast<int32_t>(n.literals.size());
      f.len = 0;
      return narrow(n.literals, f, c, [](int32_t) { return true; });
    case NodeKind::kUnion:
      for (int32_t alt : n.alternatives) {
        JsonFrame t = f;
        t.node = alt;
        if (begin_value(g, t, c)) return f = t, true;
      }
      return false;
  }
  return false;
}

// One byte inside a string; false when refused. Pops nothing: the caller pops on the
// closing quote (returned through `closed`).
bool string_byte(const SchemaNode& n, JsonFrame& f, uint8_t c, bool& closed) {
  if (f.need > 0) {
    if (c < f.next_lo || c > f.next_hi) return false;
    --f.need;
    f.next_lo = 0x80;
    f.next_hi = 0xBF;
    return true;
  }
  if (f.esc == 1) {
    if (c == 'u') return f.esc = 2, f.surrogate = 0, true;
    if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') return f.esc = 0, true;
    return false;
  }
  if (f.esc >= 2) {
    if (!is_hex(c)) return false;
    if (f.esc == 2) f.surrogate = (c == 'd' || c == 'D');
    if (f.esc == 3 && f.surrogate && !is_digit(c) ) return false;  // \uD800-\uDFFF: no lone surrogates
    if (f.esc == 3 && f.surrogate && c >= '8') return false;
    f.esc = f.esc == 5 ? 0 : static_cast<uint8_t>(f.esc + 1);
    return true;
  }
  if (c == '"') {
    if (f.count < n.min_count) return false;
    closed = true;
    return true;
  }
  if (c < 0x20) return false;
  if (c >= 0x80 && c < 0xC2) return false;  // continuation or overlong lead
  if (c > 0xF4) return false;
  if (n.max_count >= 0 && f.count >= n.max_count) return false;
  ++f.count;
  if (c == '\\') return f.esc = 1, true;
  if (c < 0x80) return true;
  f.next_lo = 0x80;
  f.next_hi = 0xBF;
  if (c < 0xE0) {
    f.need = 1;
  } else if (c < 0xF0) {
    f.need = 2;
    if (c == 0xE0) f.next_lo = 0xA0;
    if (c == 0xED) f.next_hi = 0x9F;  // no UTF-16 surrogates
  } else {
    f.need = 3;
    if (c == 0xF0) f.next_lo = 0x90;
    if (c == 0xF4) f.next_hi = 0x8F;
  }
  return true;
}

enum class Step { kRefuse, kTaken, kPop, kPopRefeed };

// The number's byte, or kPopRefeed when the number is complete and c belongs to the parent.
Step number_byte(bool integer, JsonFrame& f, uint8_t c) {
  const bool digit = is_digit(c);
  switch (f.phase) {
    case kNumSign:
      if (c == '0') return f.phase = kNumZero, Step::kTaken;
      if (digit) return f.phase = kNumInt, f.digits = 1, Step::kTaken;
      return Step::kRefuse;
    case kNumZero:
    case kNumInt:
      if (digit && f.phase == kNumInt) return ++f.digits > kMaxIntDigits ? Step::kRefuse : Step::kTaken;
      if (digit) return Step::kRefuse;  // no leading zeros
      if (!integer && c == '.') return f.phase = kNumFracStart, f.digits = 0, Step::kTaken;
      if (!integer && (c == 'e' || c == 'E')) return f.phase = kNumExpStart, f.digits = 0, Step::kTaken;
      return Step::kPopRefeed;
    case kNumFracStart:
      return digit ? (f.phase = kNumFrac, f.digits = 1, Step::kTaken) : Step::kRefuse;
    case kNumFrac:
      if (digit) return ++f.digits > kMaxFracDigits ? Step::kRefuse : Step::kTaken;
      if (c == 'e' || c == 'E') return f.phase = kNumExpStart, f.digits = 0, Step::kTaken;
      return Step::kPopRefeed;
    case kNumExpStart:
      if (c == '+' || c == '-') return f.phase = kNumExpSign, Step::kTaken;
      return digit ? (f.phase = kNumExp, f.digits = 1, Step::kTaken) : Step::kRefuse;
    case kNumExpSign:
      return digit ? (f.phase = kNumExp, f.digits = 1, Step::kTaken) : Step::kRefuse;
    case kNumExp:
      if (digit) return ++f.digits > kMaxExpDigits ? Step::kRefuse : Step::kTaken;
      return Step::kPopRefeed;
  }
  return Step::kRefuse;
}

}  // namespace

int64_t JsonStack::string_room(const SchemaGraph& g) const {
  const JsonFrame& f = frames[static_cast<size_t>(depth - 1)];
  const SchemaNode& n = g.nodes[static_cast<size_t>(f.node)];
  return n.max_count < 0 ? -1 : n.max_count - f.count;
}

bool json_feed(const SchemaGraph& g, JsonStack& s, uint8_t c) {
  for (;;) {
    if (s.depth == 0) return false;
    JsonFrame& f = s.frames[static_cast<size_t>(s.depth - 1)];
    const SchemaNode& n = g.nodes[static_cast<size_t>(f.node)];
    // Pushes a value of `node` and feeds c to it.
    auto push_value = [&](int32_t node) {
      if (s.depth >= kMaxJsonFrames) return false;
      JsonFrame& v = s.frames[static_cast<size_t>(s.depth++)];
      v = JsonFrame{};
      v.node = node;
      return begin_value(g, v, c);
    };
    switch (f.kind) {
      case JsonFrame::kValue:
        return begin_value(g, f, c);
      case JsonFrame::kString: {
        bool closed = false;
        if (!string_byte(n, f, c, closed)) return false;
        if (closed) --s.depth;
        return true;
      }
      case JsonFrame::kNumber: {
        const Step st = number_byte(n.kind == NodeKind::kInteger, f, c);
        if (st == Step::kRefuse) return false;
        if (st == Step::kTaken) return true;
        --s.depth;  // complete: c is the parent's
        continue;
      }
      case JsonFrame::kLiterals: {
        if (narrow(n.literals, f, c, [](int32_t) { return true; })) return true;
        if (n.literals[static_cast<size_t>(f.lo)].size() != static_cast<size_t>(f.len)) return false;
        --s.depth;
        continue;
      }
      case JsonFrame::kArray:
        switch (f.phase) {
          case kArrOpen:
            if (c == ']') return n.min_count == 0 ? (--s.depth, true) : false;
            if (n.max_count == 0) return false;
            f.count = 1;
            f.phase = kArrAfterValue;
            return push_value(n.items);
          case kArrAfterValue:
            if (c == ',') return (n.max_count < 0 || f.count < n.max_count) ? (f.phase = kArrSep, true) : false;
            if (c == ']') return f.count >= n.min_count ? (--s.depth, true) : false;
            return false;
          case kArrSep:
            if (c == ' ') return f.phase = kArrSepSpace, true;
            [[fallthrough]];
          case kArrSepSpace:
            ++f.count;
            f.phase = kArrAfterValue;
            return push_value(n.items);
        }
        return false;
      case JsonFrame::kObject: {
        auto unseen = [&](int32_t i) { return !(f.seen >> i & 1); };
        auto start_key = [&] {
          f.phase = kObjKey;
          f.lo = 0;
          f.hi = static_cast<int32_t>(n.properties.size());
          f.len = 0;
          return f.hi > 0 && !all_seen(n, f.seen);
        };
        switch (f.phase) {
          case kObjOpen:
            if (c == '}') return n.required_mask == 0 ? (--s.depth, true) : false;
            return c == '"' && start_key();
          case kObjKey:
            if (c == '"') {
              const auto& p = n.properties[static_cast<size_t>(f.lo)];
              if (p.name.size() != static_cast<size_t>(f.len) || !unseen(f.lo)) return false;
              f.seen |= uint64_t{1} << f.lo;
              f.phase = kObjColon;
              return true;
            }
            return narrow(n.key_names, f, c, [&](int32_t i) { return unseen(i); });
          case kObjColon:
            return c == ':' ? (f.phase = kObjColonSpace, true) : false;
          case kObjColonSpace: {
            f.phase = kObjAfterValue;
            const int32_t child = n.properties[static_cast<size_t>(f.lo)].node;
            if (c == ' ') {
              if (s.depth >= kMaxJsonFrames) return false;
              JsonFrame& v = s.frames[static_cast<size_t>(s.depth++)];
              v = JsonFrame{};
              v.node = child;
              return true;
            }
            return push_value(child);
          }
          case kObjAfterValue:
            if (c == ',') return all_seen(n, f.seen) ? false : (f.phase = kObjComma, true);
            if (c == '}') return (f.seen & n.required_mask) == n.required_mask ? (--s.depth, true) : false;
            return false;
          case kObjComma:
            if (c == ' ') return f.phase = kObjCommaSpace, true;
            [[fallthrough]];
          case kObjCommaSpace:
            return c == '"' && start_key();
        }
        return false;
      }
    }
    return false;
  }
}

}  // namespace sy::constrain
