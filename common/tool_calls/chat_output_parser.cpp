#include "common/tool_calls/chat_output_parser.h"

#include <nlohmann/json.hpp>

namespace sy {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kCallOpen = "<tool_call>";
constexpr std::string_view kCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr int kMaxCallDepth = 64;  // deeper model output is not parsed whole
constexpr size_t kMaxCallHeaderBytes = 1024;  // a call header longer than this is not one


bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// `s` is a proper prefix of `tag` (more text could complete it).
bool partial_of(std::string_view s, std::string_view tag) {
  return s.size() < tag.size() && tag.substr(0, s.size()) == s;
}

// The length of the longest suffix of `s` that is a proper prefix of `tag`: text that
// must wait for the next chunk.
size_t partial_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

enum class Match { kNeedMore, kYes, kNo };

// Reads `{ "name" : "<name>" , "arguments"|"parameters" : {` (whitespace anywhere between).
// On kYes, `consumed` is the header's length up to the arguments' `{` and `name` the
// decoded name.
Match match_header(std::string_view s, size_t& consumed, std::string& name) {
  size_t i = 0;
  auto space = [&] {
    while (i < s.size() && is_json_space(s[i])) ++i;
  };
  // Returns kYes after consuming `w`, kNeedMore if the text ends inside it.
  auto literal = [&](std::string_view w) {
    const size_t n = std::min(w.size(), s.size() - i);
    if (s.substr(i, n) != w.substr(0, n)) return Match::kNo;
    if (n < w.size()) return Match::kNeedMore;
    i += w.size();
    return Match::kYes;
  };
  for (std::string_view w : {"{", "\"name\"", ":"}) {
    space();
    if (Match m = literal(w); m != Match::kYes) return m;
  }
  space();
  if (i == s.size()) return Match::kNeedMore;
  if (s[i] != '"') return Match::kNo;
  size_t j = i + 1;
  for (; j < s.size() && s[j] != '"'; ++j) {
    if (static_cast<unsigned char>(s[j]) < 0x20) return Match::kNo;
    if (s[j] == '\\') ++j;
  }
  if (j >= s.size()) return Match::kNeedMore;
  const auto decoded = nlohmann::json::parse(s.substr(i, j + 1 - i), nullptr, false);
  if (!decoded.is_string() || decoded.get_ref<const std::string&>().empty()) return Match::kNo;
  i = j + 1;
  space();
  if (Match m = literal(","); m != Match::kYes) return m;
  space();
  Match key = literal("\"arguments\"");
  if (key == Match::kNo) key = literal("\"parameters\"");
  if (key != Match::kYes) return key;
  space();
  if (Match m = literal(":"); m != Match::kYes) return m;
  space();
  // Streamed arguments are an object; anything else (a JSON string of JSON) is read whole.
  if (i == s.size()) return Match::kNeedMore;
  if (s[i] != '{') return Match::kNo;
  name = decoded.get<std::string>();
  consumed = i;
  return Match::kYes;
}

// A whole block's text as one call: {"name": string, "arguments"/"parameters": object (or
// a string holding one), in any order}. False when it is not one.
bool parse_whole_call(std::string_view text, std::string& name, std::string& arguments) {
  if (json_text_depth(text) > kMaxCallDepth) return false;
  const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (!j.is_object()) return false;
  auto n = j.find("name");
  if (n == j.end() || !n->is_string() || n->get_ref<const std::string&>().empty()) return false;
  auto a = j.find("arguments");
  if (a == j.end()) a = j.find("parameters");
  if (a == j.end()) {
    arguments = "{}";
  } else if (a->is_object()) {
    arguments = a->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } else if (a->is_string() &&
             nlohmann::json::parse(a->get_ref<const std::string&>(), nullptr, false).is_object()) {
    arguments = a->get<std::string>();
  } else {
    return false;
  }
  name = n->get<std::string>();
  return true;
}

}  // namespace

void ChatMessage::apply(const std::vector<ChatEvent>& events) {
  for (const ChatEvent& e : events) {
    switch (e.kind) {
      case ChatEvent::Kind::kReasoning:
        reasoning += e.text;
        break;
      case ChatEvent::Kind::kContent:
        content += e.text;
        break;
      case ChatEvent::Kind::kToolCallStart:
        tool_calls.push_back({e.id, e.text, ""});
        break;
      case ChatEvent::Kind::kToolCallArguments:
        if (e.index >= 0 && static_cast<size_t>(e.index) < tool_calls.size())
          tool_calls[static_cast<size_t>(e.index)].arguments += e.text;
        break;
    }
  }
}

ChatOutputParser::ChatOutputParser(ChatOutputSpec spec, std::string id_prefix)
    : spec_(spec), id_prefix_(std::move(id_prefix)) {}

std::vector<ChatEvent> ChatOutputParser::feed(std::string_view text) {
  buf_.append(text);
  while (step()) {
  }
  std::vector<ChatEvent> events;
  events.swap(out_);
  return events;
}

std::vector<ChatEvent> ChatOutputParser::finish() {
  while (step()) {
  }
  switch (state_) {
    case State::kReasoning:  // truncated while thinking
      emit_text(ChatEvent::Kind::kReasoning, buf_, reasoning_space_);
      break;
    case State::kStart:
    case State::kContent:
    case State::kPlain:
      emit_content(buf_);
      break;
    case State::kLlamaStart:  // whitespace, or a partial <|python_tag|> that never came
      emit_content(buf_);
      break;
    case State::kLlamaBetween:  // separators after a call
      break;
    case State::kHeader:
      if (hermes()) step_bad_block(true);
      else emit_content(buf_);  // JSON text that never became a call
      break;
    case State::kBadBlock:
      step_bad_block(true);
      break;
    case State::kArguments:  // truncated: the call keeps what was streamed
    case State::kTail:
    case State::kSkip:
      break;
  }
  buf_.clear();
  state_ = State::kPlain;
  if (calls_ == 0) emit(ChatEvent::Kind::kContent, held_space_);
  held_space_.clear();
  std::vector<ChatEvent> events;
  events.swap(out_);
  return events;
}

ChatOutputParser::State ChatOutputParser::content_state() const {
  switch (spec_.tool_format) {
    case ToolCallFormat::kHermes:
      return State::kContent;
    case ToolCallFormat::kLlama3Json:
      return State::kLlamaStart;
    case ToolCallFormat::kNone:
      break;
  }
  return State::kPlain;
}

bool ChatOutputParser::step() {
  if (skip_space_) {
    size_t n = 0;
    while (n < buf_.size() && is_json_space(buf_[n])) ++n;
    buf_.erase(0, n);
    if (buf_.empty()) return false;
    skip_space_ = false;
  }
  switch (state_) {
    case State::kStart:
      return step_start();
    case State::kReasoning:
      return step_reasoning();
    case State::kContent:
      return step_content();
    case State::kLlamaStart:
      return step_llama_start();
    case State::kPlain:
      emit_content(buf_);
      buf_.clear();
      return false;
    case State::kHeader:
      return step_header();
    case State::kArguments:
      return step_arguments();
    case State::kTail:
      return step_tail();
    case State::kSkip:
      return step_skip();
    case State::kBadBlock:
      return step_bad_block(false);
    case State::kLlamaBetween:
      return step_llama_between();
  }
  return false;
}

bool ChatOutputParser::step_start() {
  if (!spec_.reasoning) {
    state_ = content_state();
    return true;
  }
  if (spec_.starts_in_reasoning) {
    state_ = State::kReasoning;
    skip_space_ = true;
    return true;
  }
  size_t p = 0;
  while (p < buf_.size() && is_json_space(buf_[p])) ++p;
  const std::string_view rest = std::string_view(buf_).substr(p);
  if (rest.empty() || partial_of(rest, kThinkOpen)) return false;
  if (starts_with(rest, kThinkOpen)) {
    buf_.erase(0, p + kThinkOpen.size());
    state_ = State::kReasoning;
    skip_space_ = true;
    return true;
  }
  state_ = content_state();
  return true;
}

bool ChatOutputParser::step_reasoning() {
  const size_t k = buf_.find(kThinkClose);
  if (k != std::string::npos) {
    emit_text(ChatEvent::Kind::kReasoning, std::string_view(buf_).substr(0, k), reasoning_space_);
    reasoning_space_.clear();
    buf_.erase(0, k + kThinkClose.size());
    state_ = content_state();
    skip_space_ = true;
    return true;
  }
  const size_t keep = partial_suffix(buf_, kThinkClose);
  emit_text(ChatEvent::Kind::kReasoning, std::string_view(buf_).substr(0, buf_.size() - keep),
            reasoning_space_);
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool ChatOutputParser::step_content() {
  const size_t k = buf_.find(kCallOpen);
  if (k != std::string::npos) {
    emit_content(std::string_view(buf_).substr(0, k));
    held_space_.clear();  // whitespace before a call block is layout
    buf_.erase(0, k + kCallOpen.size());
    state_ = State::kHeader;
    return true;
  }
  const size_t keep = partial_suffix(buf_, kCallOpen);
  emit_content(std::string_view(buf_).substr(0, buf_.size() - keep));
  buf_.erase(0, buf_.size() - keep);
  return false;
}

bool ChatOutputParser::step_llama_start() {
  size_t p = 0;
  while (p < buf_.size() && is_json_space(buf_[p])) ++p;
  const std::string_view rest = std::string_view(buf_).substr(p);
  if (rest.empty() || partial_of(rest, kPythonTag)) return false;
  if (starts_with(rest, kPythonTag)) {
    buf_.erase(0, p + kPythonTag.size());
    return true;
  }
  if (rest[0] == '{') {
    buf_.erase(0, p);
    state_ = State::kHeader;
    return true;
  }
  state_ = State::kPlain;
  return true;
}

bool ChatOutputParser::step_header() {
  size_t consumed = 0;
  std::string name;
  Match m = match_header(buf_, consumed, name);
  if (m == Match::kYes && consumed > kMaxCallHeaderBytes) m = Match::kNo;  // same in any chunking
  switch (m) {
    case Match::kNeedMore:
      if (buf_.size() <= kMaxCallHeaderBytes) return false;
      state_ = hermes() ? State::kBadBlock : State::kPlain;  // no real call has such a header
      bad_scanned_ = 0;
      return true;
    case Match::kYes:
      buf_.erase(0, consumed);
      start_call(name);
      args_ = JsonScanner();
      state_ = State::kArguments;
      return true;
    case Match::kNo:
      state_ = hermes() ? State::kBadBlock : State::kPlain;
      bad_scanned_ = 0;
      return true;
  }
  return false;
}

bool ChatOutputParser::step_arguments() {
  size_t i = 0;
  size_t first = std::string::npos;  // where this chunk's part of the value begins
  JsonScanner::Result r = JsonScanner::Result::kMore;
  for (; i < buf_.size(); ++i) {
    r = args_.push(buf_[i]);
    if (r == JsonScanner::Result::kReject) break;
    if (first == std::string::npos && args_.started()) first = i;
    if (r == JsonScanner::Result::kDone) {
      ++i;
      break;
    }
  }
  if (first != std::string::npos)
    emit(ChatEvent::Kind::kToolCallArguments, std::string_view(buf_).substr(first, i - first));
  buf_.erase(0, i);
  if (r == JsonScanner::Result::kMore) return false;
  state_ = r == JsonScanner::Result::kDone ? State::kTail : State::kSkip;
  tail_brace_ = false;
  return true;
}

bool ChatOutputParser::step_tail() {
  size_t p = 0;
  while (p < buf_.size() && is_json_space(buf_[p])) ++p;
  buf_.erase(0, p);
  if (buf_.empty()) return false;
  if (!tail_brace_) {
    if (buf_[0] != '}') {
      state_ = State::kSkip;
      return true;
    }
    tail_brace_ = true;
    buf_.erase(0, 1);
    if (!hermes()) state_ = State::kLlamaBetween;
    return true;
  }
  if (partial_of(buf_, kCallClose)) return false;
  if (starts_with(buf_, kCallClose)) {
    buf_.erase(0, kCallClose.size());
    state_ = State::kContent;
    return true;
  }
  state_ = State::kSkip;
  return true;
}

bool ChatOutputParser::step_skip() {
  if (!hermes()) {
    buf_.clear();
    return false;
  }
  const size_t k = buf_.find(kCallClose);
  if (k != std::string::npos) {
    buf_.erase(0, k + kCallClose.size());
    state_ = State::kContent;
    return true;
  }
  buf_.erase(0, buf_.size() - partial_suffix(buf_, kCallClose));
  return false;
}

bool ChatOutputParser::step_bad_block(bool at_end) {
  size_t k = buf_.find(kCallClose, bad_scanned_);
  if (k == std::string::npos) {
    // The next search starts where a closing tag could still begin: linear in the block.
    bad_scanned_ = buf_.size() - partial_suffix(buf_, kCallClose);
    if (!at_end) return false;
    k = buf_.size();
  }
  std::string name, arguments;
  if (parse_whole_call(std::string_view(buf_).substr(0, k), name, arguments)) {
    start_call(name);
    emit(ChatEvent::Kind::kToolCallArguments, arguments);
  }
  buf_.erase(0, std::min(buf_.size(), k + kCallClose.size()));
  state_ = State::kContent;
  return !at_end;
}

bool ChatOutputParser::step_llama_between() {
  size_t p = 0;
  while (p < buf_.size() && (is_json_space(buf_[p]) || buf_[p] == ';')) ++p;
  if (p == buf_.size()) return false;
  buf_.erase(0, p);
  state_ = buf_[0] == '{' ? State::kHeader : State::kPlain;
  return true;
}

void ChatOutputParser::start_call(const std::string& name) {
  held_space_.clear();  // whitespace before a call is layout, not content
  dropping_ = !spec_.parallel_tool_calls && calls_ > 0;
  ++calls_;
  if (dropping_) return;
  ChatEvent e;
  e.kind = ChatEvent::Kind::kToolCallStart;
  e.text = name;
  e.index = emitted_calls_++;
  e.id = id_prefix_ + std::to_string(e.index);
  out_.push_back(std::move(e));
}

void ChatOutputParser::emit(ChatEvent::Kind kind, std::string_view text) {
  if (text.empty()) return;
  if (kind == ChatEvent::Kind::kContent) content_shown_ = true;
  const bool call = kind == ChatEvent::Kind::kToolCallArguments;
  if (call && dropping_) return;
  const int32_t index = call ? emitted_calls_ - 1 : 0;
  if (!out_.empty() && out_.back().kind == kind && out_.back().index == index) {
    out_.back().text.append(text);
    return;
  }
  ChatEvent e;
  e.kind = kind;
  e.text = std::string(text);
  e.index = index;
  out_.push_back(std::move(e));
}

// With tool calls possible, trailing whitespace of content waits: it is content only if
// more content follows it (not a call, not the end of a message that has calls).
// So is leading whitespace (before the first content, between calls and after them).
void ChatOutputParser::emit_content(std::string_view text) {
  if (spec_.tool_format == ToolCallFormat::kNone) return emit(ChatEvent::Kind::kContent, text);
  if (!content_shown_) {
    held_space_.clear();
    while (!text.empty() && is_json_space(text.front())) text.remove_prefix(1);
  }
  emit_text(ChatEvent::Kind::kContent, text, held_space_);
}

// Emits `text` but keeps its trailing whitespace in `held`, which goes out in front of
// the next text that is not all whitespace.
void ChatOutputParser::emit_text(ChatEvent::Kind kind, std::string_view text, std::string& held) {
  size_t end = text.size();
  while (end > 0 && is_json_space(text[end - 1])) --end;
  if (end == 0) {
    held.append(text);
    return;
  }
  emit(kind, held);
  held.clear();
  emit(kind, text.substr(0, end));
  held.assign(text.substr(end));
}

}  // namespace sy
