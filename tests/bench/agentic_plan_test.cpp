// The agentic workload's plan, parsers and report arithmetic, without a server: a seed
// plans the same sessions every time, within the spec's ranges; the oracle counters and
// /admin/status samples parse; the report counts what it is given.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "bench/agentic/agentic_report.h"

namespace sy::bench {
namespace {

AgenticSpec small_spec() {
  AgenticSpec s;
  s.seed = 7;
  s.agent_types = 3;
  s.system_tokens = 100;
  s.task_tokens = 20;
  s.tool_tokens_min = 10, s.tool_tokens_max = 40;
  s.reply_tokens_min = 4, s.reply_tokens_max = 8;
  s.turns_min = 2, s.turns_max = 5;
  s.max_context_tokens = 2000;
  s.session_rate = 5;
  s.duration_s = 10;
  return s;
}

TEST(AgenticPlan, DeterministicFromTheSeedAndWithinTheSpec) {
  const AgenticSpec spec = small_spec();
  const auto a = plan_sessions(spec), b = plan_sessions(spec);
  ASSERT_GT(a.size(), 10u);
  ASSERT_EQ(a.size(), b.size());
  double last = 0;
  std::set<int64_t> types;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].turns.size(), b[i].turns.size());
    EXPECT_GE(a[i].arrival_s, last);
    EXPECT_LT(a[i].arrival_s, spec.duration_s);
    last = a[i].arrival_s;
    types.insert(a[i].agent_type);
    EXPECT_GE(a[i].turns.size(), 2u);
    EXPECT_LE(a[i].turns.size(), 5u);
    for (size_t k = 0; k < a[i].turns.size(); ++k) {
      const TurnPlan& t = a[i].turns[k];
      EXPECT_EQ(t.tool_tokens, b[i].turns[k].tool_tokens);
      EXPECT_EQ(t.tool_tokens == 0, k == 0);
      if (k > 0) {
        EXPECT_TRUE(t.tool_tokens >= 10 && t.tool_tokens <= 40);
      }
      EXPECT_TRUE(t.reply_tokens >= 4 && t.reply_tokens <= 8);
    }
  }
  EXPECT_EQ(types.size(), 3u);
  AgenticSpec other = spec;
  other.seed = 8;
  const auto c = plan_sessions(other);
  EXPECT_TRUE(c.size() != a.size() || c[0].arrival_s != a[0].arrival_s);
  other.turns_min = 6;
  EXPECT_THROW(plan_sessions(other), std::invalid_argument);
}

TEST(AgenticPlan, SessionsOfATypeShareExactlyTheSystemPrompt) {
  const AgenticSpec spec = small_spec();
  const auto plan = plan_sessions(spec);
  const auto m0 = opening_messages(spec, plan[0]);
  const auto m1 = opening_messages(spec, plan[1]);
  EXPECT_EQ(m0[0]["content"] == m1[0]["content"], plan[0].agent_type == plan[1].agent_type);
  EXPECT_NE(m0[1]["content"], m1[1]["content"]);
  EXPECT_NE(system_prompt(spec, 0), system_prompt(spec, 1));
  // About 4.75 characters a token.
  EXPECT_NEAR(static_cast<double>(system_prompt(spec, 0).size()), 475.0, 40.0);
  EXPECT_NE(tool_output(plan[0], 1, 30), tool_output(plan[0], 2, 30));
  const auto body = nlohmann::json::parse(agentic_turn_body("m", m0, 8, plan[0].session_id()));
  EXPECT_EQ(body["user"], plan[0].session_id());
  EXPECT_EQ(body["max_tokens"], 8);
  EXPECT_TRUE(body["stream"].get<bool>() && body["ignore_eos"].get<bool>());
}

TEST(AgenticReport, ParsersAndArithmetic) {
  const auto oracle = parse_gateway_counters(
      "# HELP x\nswitchyard_gateway_oracle_prompt_tokens_total "
      "1000\nswitchyard_gateway_oracle_cached_tokens_total 750\nswitchyard_gateway_hedges_total 7\n"
      "switchyard_gateway_hedges_won_total 3\nswitchyard_gateway_hedges_denied_total 9\n"
      "switchyard_gateway_stalls_total 2\nswitchyard_gateway_preempted_total 5\n"
      "switchyard_gateway_hedges_deferred_total 6\n");
  ASSERT_TRUE(oracle);
  EXPECT_EQ(oracle->prompt_tokens, 1000);
  EXPECT_EQ(oracle->cached_tokens, 750);
  EXPECT_EQ(oracle->hedges, 7);
  EXPECT_EQ(oracle->hedges_won, 3);
  EXPECT_EQ(oracle->stalls, 2);
  EXPECT_EQ(oracle->preempted, 5);
  EXPECT_EQ(oracle->hedges_deferred, 6);
  EXPECT_EQ((*oracle - GatewayCounts{100, 50, 2, 1}).hedges_won, 2);
  EXPECT_EQ((*oracle - GatewayCounts{100, 50, 2, 1, 1, 4}).preempted, 1);
  EXPECT_FALSE(parse_gateway_counters("switchyard_gateway_prompt_tokens_total 5\n"));

  LoadSample s;
  ASSERT_TRUE(parse_load_sample(
      R"({"replicas":[{"state":"ready","load":{"in_flight":3},"prefill_s_per_token":2e-4},{"state":"starting","load":{"in_flight":0}},)"
      R"({"state":"ready","load":{"in_flight":1},"prefill_s_per_token":1e-4}]})",
      s));
  EXPECT_EQ(s.in_flight, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(s.prefill_s_per_token, (std::vector<double>{2e-4, 1e-4}));
  EXPECT_FALSE(parse_load_sample("not json", s));
  // A replica that has measured nothing shows its default: not a fit, not averaged.
  LoadSample unmeasured;
  ASSERT_TRUE(parse_load_sample(
      R"({"replicas":[{"state":"ready","load":{"in_flight":3},"prefill_s_per_token":2e-4,"prefill_cost_samples":4},)"
      R"({"state":"ready","load":{"in_flight":1},"prefill_s_per_token":1e-3,"prefill_cost_samples":0}]})",
      unmeasured));
  EXPECT_EQ(unmeasured.prefill_s_per_token[0], 2e-4);
  EXPECT_TRUE(std::isnan(unmeasured.prefill_s_per_token[1]));

  AgenticRun run;
  run.start = Clock::now();
  run.sessions_planned = run.sessions_started = 1;
  LoadSample late;  // after arrivals ended (small_spec: 10 s): one replica drained
  late.at_s = 20;
  late.in_flight = {4, 0};
  late.prefill_s_per_token = {5e-4, 1e-4};
  run.load = {s, unmeasured, late};
  for (int turn = 0; turn < 3; ++turn) {
    TurnResult t;
    t.turn = turn;
    RequestRecord& r = t.record;
    r.replica = turn == 2 ? "r1" : "r0";  // the third turn moved
    r.attempts = turn == 2 ? 2 : 1;  // and was hedged
    r.max_tokens = r.completion_tokens = 3;
    r.prompt_tokens = 100;
    r.cached_tokens = turn == 1 ? 80 : 0;
    r.issued = run.start + std::chrono::milliseconds(1000 * turn);
    for (int k = 0; k < 3; ++k)
      r.arrivals.push_back({r.issued + std::chrono::milliseconds((turn == 2 ? 400 : 100) + 10 * k), 1});
    r.done = r.arrivals.back().at;
    r.content_events = 3;
    r.streamed_tokens = 3;
    r.text = "a b c";
    run.turns.push_back(t);
  }
  TurnResult failed;
  failed.turn = 3;
  failed.record.fail(ErrorKind::kValidation, "short");
  failed.record.issued = failed.record.done = run.start;
  run.turns.push_back(failed);
  run.end = Clock::now();
  const auto report = agentic_report(run, small_spec(), "t", *oracle);
  EXPECT_FALSE(report["valid"].get<bool>());
  EXPECT_EQ(report["ok"], 3);
  EXPECT_EQ(report["errors_by_kind"]["validation"], 1);
  EXPECT_DOUBLE_EQ(report["prefix_hit_rate"].get<double>(), 80.0 / 300.0);
  EXPECT_DOUBLE_EQ(report["oracle_hit_rate"].get<double>(), 0.75);
  EXPECT_NEAR(report["ttft_ms"]["p50"].get<double>(), 100.0, 1e-6);
  EXPECT_EQ(report["ttft_ms_by_turn"].size(), 3u);
  // Turn 1 stayed on r0, turn 2 moved to r1 (400 ms, 100 of the 220 uncached tokens).
  EXPECT_EQ(report["session_moves"]["later_turns"], 2);
  EXPECT_EQ(report["session_moves"]["moved"], 1);
  EXPECT_NEAR(report["session_moves"]["ttft_ms"]["p90"].get<double>(), 400.0, 1e-6);
  EXPECT_NEAR(report["session_moves"]["uncached_share"].get<double>(), 100.0 / 220.0, 1e-12);
  EXPECT_EQ(report["hedges"]["won"], 3);
  // By replica: r0 served the session's first two turns (120 ms each in flight), r1 the
  // third (420 ms); the wall is the first issue to the last done, 2.42 s.
  const auto& by = report["by_replica"]["replicas"];
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(by[0]["replica"], "r0");
  EXPECT_EQ(by[0]["sessions_started"], 1);
  EXPECT_EQ(by[0]["turns"], 2);
  EXPECT_EQ(by[1]["sessions_started"], 0);
  EXPECT_NEAR(by[0]["in_flight_s"].get<double>(), 0.24, 1e-9);
  EXPECT_NEAR(by[1]["mean_in_flight"].get<double>(), 0.42 / 2.42, 1e-9);
  EXPECT_NEAR(by[0]["computed_tokens"].get<double>(), 120, 1e-9);
  EXPECT_NEAR(by[1]["itl_ms_p50"].get<double>(), 10, 1e-6);
  EXPECT_NEAR(by[0]["mean_ttft_s"].get<double>(), 0.10, 1e-9);
  EXPECT_NEAR(by[1]["mean_ttft_s"].get<double>(), 0.40, 1e-9);
  EXPECT_NEAR(report["by_replica"]["busiest_over_least"].get<double>(), 0.42 / 0.24, 1e-9);
  EXPECT_NE(agentic_summary(report).find("r0 1/2/0.10/0.12/0.10/100/10.0 r1 0/1/0.17/0.42/0.40/100/10.0"), std::string::npos)
      << agentic_summary(report);
  EXPECT_NE(agentic_summary(report).find("previous turn: 1 of 2 (TTFT ms p50 400 p90 400; 45.5 % of uncached prompt tokens); hedges sent 7, won 3, deferred 6"), std::string::npos)
      << agentic_summary(report);
  EXPECT_NEAR(report["per_user_output_tok_s"]["p50"].get<double>(), 100.0,
              1e-6);  // 2 tokens in 20 ms
  EXPECT_DOUBLE_EQ(report["load"]["busiest_over_least_mean"].get<double>(), (10.0 / 3) / (2.0 / 3));
  EXPECT_DOUBLE_EQ(report["load_while_arriving"]["busiest_over_least_mean"].get<double>(), 3.0);
  // Fitted costs (2, 2, 5) and (1, 1, 1) × 1e-4 over the three samples: 3 / 1.
  EXPECT_NEAR(report["load"]["mean_prefill_s_per_token_per_replica"][0].get<double>(), 3e-4, 1e-12);
  EXPECT_NEAR(report["load"]["mean_prefill_s_per_token_per_replica"][1].get<double>(), 1e-4, 1e-12);  // 2 samples
  EXPECT_NEAR(report["load"]["prefill_cost_max_over_min"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(report["load_while_arriving"]["prefill_cost_max_over_min"].get<double>(), 2.0, 1e-9);
  EXPECT_NE(agentic_summary(report).find("fitted prefill cost ms/1K tokens per replica: 300.0 100.0 (max/min 3.00)"), std::string::npos)
      << agentic_summary(report);
  EXPECT_NE(agentic_summary(report).find("INVALID"), std::string::npos);
  // In-flight per 10 s: the two samples at 0 s, none in 10-20 s, the late one at 20 s.
  EXPECT_EQ(report["in_flight_series"]["mean_in_flight"], nlohmann::json::parse("[[3, 1], [], [4, 0]]"));
  // A CSV row per turn: the first on r0 (first token at 0.1 s, done at 0.12 s), the
  // failed one on no replica and without a first token.
  const std::string csv = agentic_turns_csv(run);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "session,agent_type,turn,replica,ok,issued_s,first_token_s,done_s,prompt_tokens,cached_tokens,completion_tokens,"
            "attempts");
  EXPECT_NE(csv.find("\n0,0,0,r0,1,0.000,0.100,0.120,100,0,3,1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n0,0,2,r1,1,2.000,2.400,2.420,100,0,3,2\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n0,0,3,,0,0.000,-1.000,0.000,-1,-1,-1,0\n"), std::string::npos) << csv;
}


// Lost context: later turns over 10K prompt tokens with under half cached, whether they
// ran where the session's previous turn did, and what they recomputed.
TEST(AgenticReport, CountsTurnsThatLostTheirContext) {
  AgenticRun run;
  run.start = Clock::now();
  run.sessions_planned = run.sessions_started = 1;
  struct Row {
    const char* replica;
    int64_t prompt, cached;
  };
  // Turn 0 is never lost (nothing to lose); turn 1 kept most; turn 2 lost it on its own
  // replica, turn 3 on another; turn 4 is below the size counted.
  const Row rows[] = {{"r0", 12000, 0}, {"r0", 15000, 12000}, {"r0", 18000, 4000}, {"r1", 20000, 2000}, {"r1", 9000, 0}};
  for (int turn = 0; turn < 5; ++turn) {
    TurnResult t;
    t.turn = turn;
    RequestRecord& r = t.record;
    r.replica = rows[turn].replica;
    r.max_tokens = r.completion_tokens = 1;
    r.prompt_tokens = rows[turn].prompt;
    r.cached_tokens = rows[turn].cached;
    r.issued = run.start + std::chrono::seconds(10 * turn);
    r.arrivals.push_back({r.issued + std::chrono::milliseconds(100), 1});
    r.done = r.arrivals.back().at;
    r.content_events = r.streamed_tokens = 1;
    r.text = "a";
    run.turns.push_back(t);
  }
  run.end = Clock::now();
  const auto report = agentic_report(run, small_spec(), "t", std::nullopt);
  const auto& lost = report["lost_context"];
  EXPECT_EQ(lost["turns"], 2);
  EXPECT_EQ(lost["moved"], 1);
  EXPECT_DOUBLE_EQ(lost["recomputed_tokens"].get<double>(), 14000 + 18000);
  EXPECT_NEAR(lost["first_s"].get<double>(), 20, 1e-6);
  EXPECT_NE(agentic_summary(report).find("under half cached): 2 turns (1 on another replica than the previous turn), "
                                         "32000 tokens recomputed, first at 20 s"),
            std::string::npos)
      << agentic_summary(report);
}

// Decode time per token by how many replicas decoded at once: A (r0, 0-4 s, 41 tokens)
// has r1's B (3-4 s) beside it for a quarter of its span, 1.25 replicas on average; B and
// D (r0 again, 3.5-4 s) have two; C (r0, 10-11 s) is alone. r0 counts once while both A
// and D decode.
TEST(AgenticReport, DecodeTimeByReplicasDecodingAtOnce) {
  AgenticRun run;
  run.start = Clock::now();
  struct Row {
    const char* replica;
    double from, to;
    int64_t tokens;
  };
  const Row rows[] = {{"r0", 0, 4, 41}, {"r1", 3, 4, 6}, {"r0", 10, 11, 21}, {"r0", 3.5, 4, 6}};
  auto at = [&](double s) { return run.start + std::chrono::microseconds(static_cast<int64_t>(s * 1e6)); };
  for (const Row& row : rows) {
    TurnResult t;
    RequestRecord& r = t.record;
    r.replica = row.replica;
    r.max_tokens = r.completion_tokens = row.tokens;
    r.issued = at(row.from - 0.1);
    r.arrivals = {{at(row.from), 1}, {at(row.to), row.tokens - 1}};
    r.done = r.arrivals.back().at;
    r.content_events = 2;
    r.streamed_tokens = row.tokens;
    r.text = "a";
    run.turns.push_back(t);
  }
  run.end = at(12);
  const auto report = agentic_report(run, small_spec(), "t", std::nullopt);
  const auto& d = report["decode_contention"];
  EXPECT_EQ(d["turns"], 4);
  EXPECT_NEAR(d["mean_replicas_decoding"].get<double>(), (1.25 + 2 + 1 + 2) / 4, 1e-9);
  ASSERT_EQ(d["by_replicas_decoding"].size(), 2u);
  EXPECT_EQ(d["by_replicas_decoding"][0]["replicas"], 1);
  EXPECT_EQ(d["by_replicas_decoding"][0]["turns"], 2);
  EXPECT_NEAR(d["by_replicas_decoding"][0]["ms_per_token_p50"].get<double>(), (100 + 50) / 2.0, 1e-6);  // A, C
  EXPECT_NEAR(d["by_replicas_decoding"][1]["ms_per_token_p50"].get<double>(), (200 + 100) / 2.0, 1e-6);  // B, D
  EXPECT_NE(agentic_summary(report).find("decode ms/token p50 by replicas decoding at once (turns): 1: 75.0 (2) "
                                         "2: 150.0 (2); mean 1.56 replicas"),
            std::string::npos)
      << agentic_summary(report);
}
}  // namespace
}  // namespace sy::bench
