// The agentic workload (issue 20), planned in full from a seed before the run: agent
// sessions arrive open-loop (Poisson) at a rate; each belongs to one of several agent
// types whose long system prompt it shares with every session of that type, opens with
// its own task, and then works in turns: the model replies (a tool call, say), the tool's
// output (hundreds to thousands of tokens) is appended, and the whole conversation is
// sent again after a think time. Contexts grow every turn, to a cap. Only the replies'
// text comes from the server; every length and time is in the plan.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sy::bench {

struct AgenticSpec {
  uint64_t seed = 1;
  int64_t agent_types = 4;
  int64_t system_tokens = 2000;  // each agent type's system prompt, about
  int64_t task_tokens = 200;     // each session's opening user message, about
  int64_t tool_tokens_min = 200, tool_tokens_max = 2000;  // appended per turn after the first
  int64_t reply_tokens_min = 64, reply_tokens_max = 256;  // max_tokens of each turn (ignore_eos)
  int64_t turns_min = 5, turns_max = 30;
  int64_t max_context_tokens = 65536;           // a session ends before a turn would pass this
  double think_s_min = 0.5, think_s_max = 3.0;  // between a reply and the next turn
  double session_rate = 0.5;                    // new sessions per second (Poisson arrivals)
  double duration_s = 60;                       // sessions arrive during this long
};

struct TurnPlan {
  int64_t tool_tokens = 0;   // tool output appended before this turn (0 for turn 0)
  int64_t reply_tokens = 0;  // this turn's max_tokens
  double think_s = 0;        // wait after the previous reply before sending this turn
};

struct SessionPlan {
  int64_t id = 0;
  int64_t agent_type = 0;
  double arrival_s = 0;  // from the run's start
  std::vector<TurnPlan> turns;
  std::string session_id() const { return "agent-session-" + std::to_string(id); }
};

// Every session arriving within spec.duration_s. Throws std::invalid_argument on a spec
// that makes no sense (a minimum above its maximum, a non-positive rate, ...).
std::vector<SessionPlan> plan_sessions(const AgenticSpec& spec);

// Texts of the conversation, about the given number of tokens of English prose (4.75
// characters a token). The system prompt is the same for every session of a type; the
// task opens with the session's id, so sessions share exactly the system prompt.
std::string system_prompt(const AgenticSpec& spec, int64_t agent_type);
std::string task_message(const AgenticSpec& spec, const SessionPlan& s);
std::string tool_output(const SessionPlan& s, int64_t turn, int64_t tokens);

// A session's first request's messages: the system prompt and the task.
nlohmann::json opening_messages(const AgenticSpec& spec, const SessionPlan& s);

}  // namespace sy::bench
