// Reads a chat model's generated text as it streams (ChatOutputSpec says what to look for)
// and turns it into ChatEvents: reasoning, content and tool calls. Text that may still
// turn out to be a tag (`<tool_c` at the end of a chunk) or a call header is held back
// until it resolves, so markup never reaches content; a call is announced (index, id,
// name) once its header `{"name": "f", "arguments":` has been read, and its arguments
// follow in fragments, each a validated prefix of the JSON object. Fed the same text in
// any chunking, the events reassemble into the same message (the non-streaming response
// is the whole text fed at once).
//
// Rules, whichever way the text arrives:
// - reasoning: a leading <think>…</think> (or, with starts_in_reasoning, everything up to
//   </think>); whitespace around reasoning and at the start of the content after it is
//   dropped;
//   a tool call inside reasoning is reasoning text.
// - Hermes: a <tool_call> block whose header does not read as above is parsed whole when
//   it closes (any key order); if it still is no call it is dropped, never shown as
//   content; so is an unclosed block at the end. Whitespace before a call, at the start
//   of the content and, once there is a call, at its end is not content.
// - Llama 3.1: a call is JSON at the very start of the content; text that is not a call
//   is content as written.
// - After the header, the call's arguments end where the JSON object ends, where it
//   stops being JSON (the call keeps what was valid), or where the text ends (truncated).
//
// Not thread-safe; one parser per response.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/tool_calls/chat_output.h"
#include "common/tool_calls/json_scanner.h"

namespace sy {

class ChatOutputParser {
 public:
  // Call ids are `id_prefix` followed by the call's index.
  ChatOutputParser(ChatOutputSpec spec, std::string id_prefix);

  // Text generated since the last call; returns what can be shown now.
  std::vector<ChatEvent> feed(std::string_view text);
  // Generation ended: whatever was held back is resolved.
  std::vector<ChatEvent> finish();

  // Calls announced so far (dropped ones, past the first without parallel calls, excluded).
  int32_t tool_calls() const { return emitted_calls_; }

 private:
  enum class State {
    kStart,         // before anything: is there a <think>?
    kReasoning,     // inside <think>
    kContent,       // Hermes content: looking for <tool_call>
    kLlamaStart,    // Llama content start: a call or plain text?
    kPlain,         // everything left is content
    kHeader,        // reading a call's header up to "arguments":
    kArguments,     // streaming the arguments object
    kTail,          // after the arguments: the header's '}' and the closing tag
    kSkip,          // a malformed call's rest, up to </tool_call>
    kBadBlock,      // a <tool_call> block without the usual header: parsed when it closes
    kLlamaBetween,  // after a Llama call: ';' or '{' for another, else content
  };

  bool step();  // one move on buf_; false when it needs more text
  bool step_start();
  bool step_reasoning();
  bool step_content();
  bool step_llama_start();
  bool step_header();
  bool step_arguments();
  bool step_tail();
  bool step_skip();
  bool step_bad_block(bool at_end);
  bool step_llama_between();
  State content_state() const;

  void emit(ChatEvent::Kind kind, std::string_view text);
  void emit_content(std::string_view text);
  void emit_text(ChatEvent::Kind kind, std::string_view text, std::string& held);
  void start_call(const std::string& name);
  bool hermes() const { return spec_.tool_format == ToolCallFormat::kHermes; }

  const ChatOutputSpec spec_;
  const std::string id_prefix_;
  State state_ = State::kStart;
  std::string buf_;              // text not yet consumed
  std::vector<ChatEvent> out_;   // events of the current feed()/finish()
  bool skip_space_ = false;      // drop leading whitespace (after <think>, after </think>)
  std::string held_space_;       // content whitespace shown only if content follows
  std::string reasoning_space_;  // the same for reasoning (dropped at </think>)
  bool content_shown_ = false;   // some content was emitted
  bool tail_brace_ = false;      // kTail: the header object's '}' was read
  size_t bad_scanned_ = 0;       // kBadBlock: buf_ before this holds no closing tag
  JsonScanner args_;
  int32_t calls_ = 0;            // calls whose header was read
  int32_t emitted_calls_ = 0;
  bool dropping_ = false;        // the current call is past the first without parallel calls
};

}  // namespace sy
