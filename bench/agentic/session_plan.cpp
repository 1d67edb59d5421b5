#include "bench/agentic/session_plan.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "bench/loadgen/workload.h"

namespace sy::bench {

namespace {

constexpr double kCharsPerToken = 4.75;  // as bench/loadgen/workload.cpp's prose

std::string prose(const std::string& head, int64_t tokens, uint64_t salt) {
  const size_t want = static_cast<size_t>(static_cast<double>(tokens) * kCharsPerToken);
  // Start the prose at a word chosen by `salt`, so tool outputs differ from each other.
  std::string body = english_text(want + 2048);
  size_t start = body.find(' ', salt % 1024);
  start = start == std::string::npos ? 0 : start + 1;
  body = body.substr(start);
  const size_t rest = want > head.size() ? want - head.size() : 1;
  const size_t cut = body.find(' ', std::min(rest, body.size()));
  if (cut != std::string::npos) body.resize(cut);
  return head + body;
}

void check(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("agentic workload: ") + what);
}

}  // namespace

std::vector<SessionPlan> plan_sessions(const AgenticSpec& spec) {
  check(spec.agent_types >= 1, "agent types must be >= 1");
  check(spec.system_tokens >= 1 && spec.task_tokens >= 1, "system and task tokens must be >= 1");
  check(spec.tool_tokens_min >= 1 && spec.tool_tokens_min <= spec.tool_tokens_max,
        "tool tokens: 1 <= min <= max");
  check(spec.reply_tokens_min >= 1 && spec.reply_tokens_min <= spec.reply_tokens_max,
        "reply tokens: 1 <= min <= max");
  check(spec.turns_min >= 1 && spec.turns_min <= spec.turns_max, "turns: 1 <= min <= max");
  check(spec.think_s_min >= 0 && spec.think_s_min <= spec.think_s_max,
        "think time: 0 <= min <= max");
  check(spec.session_rate > 0 && spec.duration_s > 0, "session rate and duration must be > 0");
  check(spec.max_context_tokens > spec.system_tokens + spec.task_tokens + spec.reply_tokens_max,
        "max context too small for one turn");
  std::mt19937_64 rng(spec.seed);
  // Distributions are written out (not std::*_distribution, whose results differ across
  // standard libraries) so that a seed plans the same sessions everywhere.
  auto unit = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto between = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<SessionPlan> out;
  double t = 0;
  for (int64_t id = 0;; ++id) {
    t += -std::log(1.0 - unit()) / spec.session_rate;
    if (t >= spec.duration_s) break;
    SessionPlan s;
    s.id = id;
    s.arrival_s = t;
    s.agent_type = between(0, spec.agent_types - 1);
    const int64_t turns = between(spec.turns_min, spec.turns_max);
    for (int64_t k = 0; k < turns; ++k) {
      TurnPlan p;
      p.tool_tokens = k == 0 ? 0 : between(spec.tool_tokens_min, spec.tool_tokens_max);
      p.reply_tokens = between(spec.reply_tokens_min, spec.reply_tokens_max);
      p.think_s = k == 0 ? 0 : spec.think_s_min + (spec.think_s_max - spec.think_s_min) * unit();
      s.turns.push_back(p);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string system_prompt(const AgenticSpec& spec, int64_t agent_type) {
  return prose("You are agent type " + std::to_string(agent_type) +
                   ". You solve tasks by calling tools and reading their output. Background "
                   "reading follows. ",
               spec.system_tokens, static_cast<uint64_t>(agent_type) * 131);
}

std::string task_message(const AgenticSpec& spec, const SessionPlan& s) {
  return prose("Session " + s.session_id() + ". Task: ", spec.task_tokens,
               static_cast<uint64_t>(s.id) * 7 + 3);
}

std::string tool_output(const SessionPlan& s, int64_t turn, int64_t tokens) {
  return prose("Tool output for " + s.session_id() + ", step " + std::to_string(turn) + ":\n",
               tokens, static_cast<uint64_t>(s.id) * 1009 + static_cast<uint64_t>(turn) * 17);
}

nlohmann::json opening_messages(const AgenticSpec& spec, const SessionPlan& s) {
  return nlohmann::json::array(
      {{{"role", "system"}, {"content", system_prompt(spec, s.agent_type)}},
       {{"role", "user"}, {"content", task_message(spec, s)}}});
}

}  // namespace sy::bench
