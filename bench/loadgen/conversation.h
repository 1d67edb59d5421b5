// Multi-turn chat for closed-loop runs: each user holds a conversation that grows turn by
// turn (its user messages and the assistant's real replies) and starts a new one after
// `turns` turns. Conversations share a few system prompts, as the users of one product
// do. This is the workload where prefix-aware routing pays: every turn's prompt extends
// the previous turn's prompt, and every conversation starts with a shared system prompt.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/loadgen/request_record.h"
#include "bench/loadgen/workload.h"

namespace sy::bench {

struct MultiTurnSpec {
  int64_t turns = 0;            // 0: single-turn workload
  int64_t system_prompts = 4;   // conversation k uses system prompt k mod system_prompts
  int64_t system_tokens = 256;  // about this many tokens each
  int64_t turn_tokens = 64;     // about this many tokens per user message
};

class Conversations {
 public:
  Conversations(const MultiTurnSpec& spec, int64_t users);

  // The next request of `user`: the conversation so far plus a new user message.
  WorkItem next(int64_t user);
  // Appends the reply to the user's conversation; a failed turn ends the conversation, so
  // a later turn never carries a history the server did not produce.
  void finished(int64_t user, const RequestRecord& record);

 private:
  struct State {
    nlohmann::json messages = nlohmann::json::array();
    int64_t turn = 0;
  };
  void start(State& s);

  MultiTurnSpec spec_;
  std::vector<State> users_;
  int64_t started_ = 0;  // conversations begun, numbering them
};

}  // namespace sy::bench
