#include "bench/loadgen/conversation.h"

#include <stdexcept>
#include <string>

namespace sy::bench {

namespace {

std::string text_of_tokens(const std::string& head, int64_t tokens) {
  const size_t want = static_cast<size_t>(static_cast<double>(tokens) * kCharsPerToken);
  return head + english_text(want > head.size() ? want - head.size() : 1);
}

}  // namespace

Conversations::Conversations(const MultiTurnSpec& spec, int64_t users) : spec_(spec) {
  if (spec.turns < 1 || spec.system_prompts < 1 || spec.system_tokens < 1 || spec.turn_tokens < 1)
    throw std::invalid_argument("multi-turn needs turns, system prompts and token counts >= 1");
  users_.resize(static_cast<size_t>(users));
  for (State& s : users_) start(s);
}

void Conversations::start(State& s) {
  const int64_t k = started_++;
  const int64_t system = k % spec_.system_prompts;
  s.turn = 0;
  s.messages = nlohmann::json::array();
  s.messages.push_back({{"role", "system"},
                        {"content", text_of_tokens("You are assistant " + std::to_string(system) + ". ",
                                                   spec_.system_tokens)}});
  // The conversation's number opens its first user message: conversations that share a
  // system prompt share exactly that prefix and no more.
  s.messages.push_back({{"role", "user"}, {"content", text_of_tokens("Conversation " + std::to_string(k) + ", turn 0. ", spec_.turn_tokens)}});
}

WorkItem Conversations::next(int64_t user) {
  State& s = users_.at(static_cast<size_t>(user));
  WorkItem item;
  item.endpoint = Endpoint::kChat;
  item.input = s.messages;
  return item;
}

void Conversations::finished(int64_t user, const RequestRecord& record) {
  State& s = users_.at(static_cast<size_t>(user));
  if (!record.ok() || ++s.turn >= spec_.turns) return start(s);
  s.messages.push_back({{"role", "assistant"}, {"content", record.text}});
  s.messages.push_back({{"role", "user"}, {"content", text_of_tokens("Turn " + std::to_string(s.turn) + ". ", spec_.turn_tokens)}});
}

}  // namespace sy::bench
