#include "bench/agentic/agentic_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>

#include "bench/agentic/decode_contention.h"
#include "bench/agentic/replica_breakdown.h"
#include "bench/loadgen/stats.h"

namespace sy::bench {

namespace {

using nlohmann::json;

json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json ms_percentiles(const std::vector<double>& seconds, std::initializer_list<double> ps) {
  json out = json::object();
  for (double p : ps)
    out["p" + std::to_string(static_cast<int>(p))] = number(percentile(seconds, p) * 1e3);
  out["count"] = seconds.size();
  return out;
}

double ratio(double a, double b) {
  return b > 0 ? a / b : std::numeric_limits<double>::quiet_NaN();
}

// Load over the samples taken until `until_s` from the run's start.
json load_json(const std::vector<LoadSample>& samples, double until_s = std::numeric_limits<double>::infinity()) {
  std::vector<double> sum, cost_sum;
  std::vector<int64_t> n, cost_n;
  double max_sum = 0, min_sum = 0;
  int64_t used = 0;
  for (const LoadSample& s : samples) {
    if (s.in_flight.empty() || s.at_s > until_s) continue;
    ++used;
    if (cost_sum.size() < s.prefill_s_per_token.size())
      cost_sum.resize(s.prefill_s_per_token.size()), cost_n.resize(s.prefill_s_per_token.size());
    for (size_t i = 0; i < s.prefill_s_per_token.size(); ++i)
      if (!std::isnan(s.prefill_s_per_token[i])) cost_sum[i] += s.prefill_s_per_token[i], ++cost_n[i];
    max_sum += static_cast<double>(*std::max_element(s.in_flight.begin(), s.in_flight.end()));
    min_sum += static_cast<double>(*std::min_element(s.in_flight.begin(), s.in_flight.end()));
    if (sum.size() < s.in_flight.size())
      sum.resize(s.in_flight.size()), n.resize(s.in_flight.size());
    for (size_t i = 0; i < s.in_flight.size(); ++i)
      sum[i] += static_cast<double>(s.in_flight[i]), ++n[i];
  }
  std::vector<double> per_replica;
  for (size_t i = 0; i < sum.size(); ++i)
    per_replica.push_back(n[i] ? sum[i] / static_cast<double>(n[i]) : 0);
  const double busiest =
      per_replica.empty() ? 0 : *std::max_element(per_replica.begin(), per_replica.end());
  const double least =
      per_replica.empty() ? 0 : *std::min_element(per_replica.begin(), per_replica.end());
  const double u = std::max<double>(1, static_cast<double>(used));
  // Over the samples where the replica had measured itself (null where it never had).
  json cost = json::array();
  double cost_max = 0, cost_min = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < cost_sum.size(); ++i) {
    if (cost_n[i] == 0) {
      cost.push_back(nullptr);
      continue;
    }
    const double c = cost_sum[i] / static_cast<double>(cost_n[i]);
    cost.push_back(c);
    cost_max = std::max(cost_max, c);
    cost_min = std::isnan(cost_min) ? c : std::min(cost_min, c);
  }
  return {{"samples", used},
          {"mean_in_flight_per_replica", per_replica},
          // The router's fitted prefill cost per replica, averaged over the samples, and the
          // largest over the smallest: replicas of one kind differing here only by noise
          // still weigh their session counts by it.
          {"mean_prefill_s_per_token_per_replica", cost},
          {"prefill_cost_max_over_min", number(ratio(cost_max, cost_min))},
          // Over the run: the busiest replica's mean in-flight ÷ the least busy one's.
          {"busiest_over_least_mean", number(ratio(busiest, least))},
          // Per sample: the busiest replica's in-flight and the least busy one's, averaged.
          {"sample_busiest_mean", max_sum / u},
          {"sample_least_mean", min_sum / u},
          {"sample_busiest_over_least", number(ratio(max_sum, min_sum))}};
}

// Each replica's mean in-flight per `bin_s` window of the run (rows by window): where
// over the run the imbalance arose.
json in_flight_series(const std::vector<LoadSample>& samples, double bin_s = 10) {
  std::vector<std::vector<double>> sum;
  std::vector<int64_t> n;
  for (const LoadSample& s : samples) {
    if (s.in_flight.empty()) continue;
    const auto bin = static_cast<size_t>(std::max(0.0, s.at_s / bin_s));
    if (sum.size() <= bin) sum.resize(bin + 1), n.resize(bin + 1);
    if (sum[bin].size() < s.in_flight.size()) sum[bin].resize(s.in_flight.size());
    for (size_t i = 0; i < s.in_flight.size(); ++i) sum[bin][i] += static_cast<double>(s.in_flight[i]);
    ++n[bin];
  }
  json rows = json::array();
  for (size_t b = 0; b < sum.size(); ++b) {
    json row = json::array();
    for (double v : sum[b]) row.push_back(n[b] ? std::round(100 * v / static_cast<double>(n[b])) / 100 : 0);
    rows.push_back(row);
  }
  return {{"bin_s", bin_s}, {"mean_in_flight", rows}};
}

}  // namespace

std::optional<GatewayCounts> parse_gateway_counters(const std::string& text) {
  std::optional<double> prompt, cached, hedges, hedges_won, stalls, preempted, deferred;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto value = [&](const char* name) -> std::optional<double> {
      const std::string n(name);
      if (line.compare(0, n.size(), n) != 0 || line.size() <= n.size() ||
          (line[n.size()] != ' ' && line[n.size()] != '{'))
        return std::nullopt;
      const size_t sp = line.rfind(' ');
      return std::strtod(line.c_str() + sp + 1, nullptr);
    };
    if (auto v = value("switchyard_gateway_oracle_prompt_tokens_total")) prompt = *v;
    if (auto v = value("switchyard_gateway_oracle_cached_tokens_total")) cached = *v;
    if (auto v = value("switchyard_gateway_hedges_total")) hedges = *v;
    if (auto v = value("switchyard_gateway_hedges_won_total")) hedges_won = *v;
    if (auto v = value("switchyard_gateway_stalls_total")) stalls = *v;
    if (auto v = value("switchyard_gateway_preempted_total")) preempted = *v;
    if (auto v = value("switchyard_gateway_hedges_deferred_total")) deferred = *v;
  }
  if (!prompt || !cached) return std::nullopt;
  return GatewayCounts{*prompt, *cached, hedges.value_or(0), hedges_won.value_or(0), stalls.value_or(0),
                       preempted.value_or(0), deferred.value_or(0)};
}

json agentic_report(const AgenticRun& run, const AgenticSpec& spec, const std::string& label,
                    const std::optional<GatewayCounts>& gateway) {
  std::vector<double> ttft, itl, user_tok_s, prompt_tokens;
  std::map<int64_t, std::vector<double>> ttft_by_turn;
  std::map<std::string, int64_t> errors;
  json error_samples = json::array();
  double completion = 0, prompt = 0, cached = 0;
  int64_t ok = 0, without_cached = 0;
  // A session's later turn served elsewhere than its previous turn (the gateway names the
  // replica) recomputes what its new replica lacks: how often, how slow, how much.
  std::map<int64_t, std::string> last_replica;
  std::vector<double> moved_ttft;
  int64_t followed = 0;  // later turns whose previous turn's replica is known
  double uncached = 0, moved_uncached = 0;
  // Lost context: a later turn of a long prompt that found under half of it cached
  // recomputes what the fleet no longer held; `lost_moved` of them ran elsewhere than
  // their previous turn.
  int64_t lost = 0, lost_moved = 0;
  double lost_tokens = 0;
  std::optional<Clock::time_point> lost_first;
  Clock::time_point first = run.end, last = run.start;
  for (const TurnResult& t : run.turns) {
    const RequestRecord& r = t.record;
    first = std::min(first, r.issued);
    last = std::max(last, r.done);
    if (!r.ok()) {
      ++errors[error_kind_name(r.error)];
      if (error_samples.size() < 5) error_samples.push_back(r.error_message);
      continue;
    }
    ++ok;
    ttft.push_back(r.ttft_s());
    ttft_by_turn[t.turn].push_back(r.ttft_s());
    for (double g : r.itl_s()) itl.push_back(g);
    const double d = r.decode_tok_s();
    if (std::isfinite(d)) user_tok_s.push_back(d);
    completion += static_cast<double>(r.completion_tokens);
    prompt += static_cast<double>(r.prompt_tokens);
    prompt_tokens.push_back(static_cast<double>(r.prompt_tokens));
    if (r.cached_tokens >= 0)
      cached += static_cast<double>(r.cached_tokens);
    else
      ++without_cached;
    const double fresh = static_cast<double>(r.prompt_tokens - std::max<int64_t>(r.cached_tokens, 0));
    uncached += fresh;
    const bool context_lost = t.turn > 0 && r.prompt_tokens > kLostContextMinTokens &&
                              2 * std::max<int64_t>(r.cached_tokens, 0) < r.prompt_tokens;
    if (context_lost) {
      ++lost;
      lost_tokens += fresh;
      lost_first = std::min(lost_first.value_or(r.issued), r.issued);
    }
    if (r.replica.empty()) continue;
    const auto [it, first_seen] = last_replica.try_emplace(t.session, r.replica);
    if (first_seen) continue;
    ++followed;
    if (it->second != r.replica) {
      lost_moved += context_lost ? 1 : 0;
      moved_ttft.push_back(r.ttft_s());
      moved_uncached += fresh;
      it->second = r.replica;
    }
  }
  const double wall = ok > 0 ? std::chrono::duration<double>(last - first).count() : 0;
  json by_turn = json::array();
  for (const auto& [turn, v] : ttft_by_turn) {
    json row = ms_percentiles(v, {50, 90, 99});
    row["turn"] = turn;
    by_turn.push_back(row);
  }
  const int64_t failed = static_cast<int64_t>(run.turns.size()) - ok;
  return {
      {"label", label},
      {"valid", failed == 0 && ok > 0},
      {"spec",
       {{"seed", spec.seed},
        {"agent_types", spec.agent_types},
        {"system_tokens", spec.system_tokens},
        {"task_tokens", spec.task_tokens},
        {"tool_tokens", {spec.tool_tokens_min, spec.tool_tokens_max}},
        {"reply_tokens", {spec.reply_tokens_min, spec.reply_tokens_max}},
        {"turns", {spec.turns_min, spec.turns_max}},
        {"think_s", {spec.think_s_min, spec.think_s_max}},
        {"max_context_tokens", spec.max_context_tokens},
        {"session_rate", spec.session_rate},
        {"duration_s", spec.duration_s}}},
      {"sessions",
       {{"planned", run.sessions_planned},
        {"started", run.sessions_started},
        {"completed", run.sessions_completed},
        {"context_capped", run.sessions_context_capped},
        {"time_capped", run.sessions_time_capped},
        {"failed", run.sessions_failed}}},
      {"turns", run.turns.size()},
      {"ok", ok},
      {"errors", failed},
      {"errors_by_kind", errors},
      {"error_samples", error_samples},
      {"wall_s", wall},
      {"aggregate_output_tok_s", number(ratio(completion, wall))},
      {"per_user_output_tok_s",
       {{"p10", number(percentile(user_tok_s, 10))}, {"p50", number(percentile(user_tok_s, 50))}}},
      {"ttft_ms", ms_percentiles(ttft, {50, 90, 99})},
      {"ttft_ms_by_turn", by_turn},
      {"itl_ms", ms_percentiles(itl, {50, 99})},
      {"prompt_tokens",
       {{"mean", number(mean(prompt_tokens))},
        {"p50", number(percentile(prompt_tokens, 50))},
        {"max", prompt_tokens.empty()
                    ? 0.0
                    : *std::max_element(prompt_tokens.begin(), prompt_tokens.end())}}},
      {"prefix_hit_rate", number(without_cached == 0 ? ratio(cached, prompt)
                                                     : std::numeric_limits<double>::quiet_NaN())},
      {"turns_without_cached_tokens", without_cached},
      {"oracle_hit_rate",
       gateway ? number(ratio(gateway->cached_tokens, gateway->prompt_tokens)) : json(nullptr)},
      {"oracle_prompt_tokens", gateway ? json(gateway->prompt_tokens) : json(nullptr)},
      {"hedges", gateway ? json({{"sent", gateway->hedges}, {"won", gateway->hedges_won}, {"deferred", gateway->hedges_deferred}})
                         : json(nullptr)},
      {"stalls", gateway ? json(gateway->stalls) : json(nullptr)},
      {"preempted", gateway ? json(gateway->preempted) : json(nullptr)},
      {"session_moves",
       {{"later_turns", followed},
        {"moved", moved_ttft.size()},
        {"ttft_ms", ms_percentiles(moved_ttft, {50, 90})},
        // Their share of every prompt token the replicas had to compute.
        {"uncached_share", number(ratio(moved_uncached, uncached))}}},
      {"lost_context",
       {{"min_prompt_tokens", kLostContextMinTokens},
        {"turns", lost},
        {"moved", lost_moved},
        {"recomputed_tokens", lost_tokens},
        {"first_s", lost_first ? json(std::chrono::duration<double>(*lost_first - run.start).count()) : json(nullptr)}}},
      {"load", load_json(run.load)},
      {"by_replica", replica_breakdown(run.turns, wall)},
      {"decode_contention", decode_contention(run.turns)},
      // While sessions still arrive: after that the fleet drains, and the last few
      // sessions, each tied to its home, leave some replicas idle before others.
      {"load_while_arriving", load_json(run.load, spec.duration_s)},
      {"load_sample_errors", run.load_sample_errors},
      {"in_flight_series", in_flight_series(run.load)},
  };
}

std::string agentic_summary(const json& r) {
  auto num = [](const json& v, int digits = 1) {
    if (!v.is_number()) return std::string("-");
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(digits);
    o << v.get<double>();
    return o.str();
  };
  std::ostringstream o;
  o << "agentic [" << r["label"].get<std::string>() << "] "
    << (r["valid"].get<bool>() ? "" : "INVALID ") << r["ok"] << "/" << r["turns"]
    << " turns ok, sessions " << r["sessions"]["started"] << "/" << r["sessions"]["planned"]
    << " started, " << r["sessions"]["completed"] << " completed, "
    << r["sessions"]["context_capped"] << " context-capped, " << r["sessions"]["time_capped"]
    << " time-capped, " << r["sessions"]["failed"] << " failed\n";
  o << "  TTFT ms p50 " << num(r["ttft_ms"]["p50"]) << " p90 " << num(r["ttft_ms"]["p90"])
    << " p99 " << num(r["ttft_ms"]["p99"]) << " | ITL ms p50 " << num(r["itl_ms"]["p50"], 2)
    << " p99 " << num(r["itl_ms"]["p99"], 2) << " | per-user tok/s p10 "
    << num(r["per_user_output_tok_s"]["p10"]) << " p50 " << num(r["per_user_output_tok_s"]["p50"])
    << " | aggregate " << num(r["aggregate_output_tok_s"]) << " tok/s\n";
  o << "  prompt tokens mean " << num(r["prompt_tokens"]["mean"], 0) << " max "
    << num(r["prompt_tokens"]["max"], 0) << " | prefix hit "
    << num(r["prefix_hit_rate"].is_number() ? json(100 * r["prefix_hit_rate"].get<double>())
                                            : json(nullptr))
    << " % oracle "
    << num(r["oracle_hit_rate"].is_number() ? json(100 * r["oracle_hit_rate"].get<double>())
                                            : json(nullptr))
    << " % | in-flight busiest/least " << num(r["load"]["busiest_over_least_mean"], 2)
    << " (per sample " << num(r["load"]["sample_busiest_mean"], 2) << " vs "
    << num(r["load"]["sample_least_mean"], 2) << "; while sessions arrive "
    << num(r["load_while_arriving"]["busiest_over_least_mean"], 2) << ")\n";
  o << "  per replica, sessions started / turns / mean in flight / mean turn s / mean TTFT s / mean prompt tokens / ITL p50 ms:";
  for (const json& x : r["by_replica"]["replicas"])
    o << " " << x["replica"].get<std::string>() << " " << x["sessions_started"] << "/" << x["turns"] << "/"
      << num(x["mean_in_flight"], 2) << "/" << num(x["mean_turn_s"], 2) << "/" << num(x["mean_ttft_s"], 2) << "/"
      << num(x["mean_prompt_tokens"], 0) << "/" << num(x["itl_ms_p50"], 1);
  o << " (in-flight seconds busiest/least " << num(r["by_replica"]["busiest_over_least"], 2) << ")\n";
  o << "  decode ms/token p50 by replicas decoding at once (turns):";
  for (const json& g : r["decode_contention"]["by_replicas_decoding"])
    o << " " << g["replicas"] << ": " << num(g["ms_per_token_p50"], 1) << " (" << g["turns"] << ")";
  o << "; mean " << num(r["decode_contention"]["mean_replicas_decoding"], 2) << " replicas\n";
  o << "  fitted prefill cost ms/1K tokens per replica:";
  for (const json& c : r["load"]["mean_prefill_s_per_token_per_replica"])
    o << " " << num(c.is_number() ? json(1e6 * c.get<double>()) : json(nullptr), 1);
  o << " (max/min " << num(r["load"]["prefill_cost_max_over_min"], 2) << ")\n";
  const json& moves = r["session_moves"];
  o << "  later turns on another replica than the session's previous turn: " << moves["moved"] << " of "
    << moves["later_turns"] << " (TTFT ms p50 " << num(moves["ttft_ms"]["p50"], 0) << " p90 "
    << num(moves["ttft_ms"]["p90"], 0) << "; "
    << num(moves["uncached_share"].is_number() ? json(100 * moves["uncached_share"].get<double>()) : json(nullptr))
    << " % of uncached prompt tokens)";
  if (r["hedges"].is_object())
    o << "; hedges sent " << num(r["hedges"]["sent"], 0) << ", won " << num(r["hedges"]["won"], 0) << ", deferred "
      << num(r["hedges"].value("deferred", json(nullptr)), 0);
  if (r["stalls"].is_number())
    o << "; attempts failed over for silence " << num(r["stalls"], 0) << ", preempted " << num(r["preempted"], 0);
  o << "\n";
  const json& lost = r["lost_context"];
  o << "  lost context (later turns over " << lost["min_prompt_tokens"] << " prompt tokens, under half cached): "
    << lost["turns"] << " turns (" << lost["moved"] << " on another replica than the previous turn), "
    << num(lost["recomputed_tokens"], 0) << " tokens recomputed, first at " << num(lost["first_s"], 0) << " s\n";
  o << "  TTFT p50/p90 ms by turn:";
  for (const json& t : r["ttft_ms_by_turn"])
    o << " " << t["turn"] << ":" << num(t["p50"], 0) << "/" << num(t["p90"], 0);
  o << "\n";
  for (const auto& [kind, n] : r["errors_by_kind"].items())
    o << "  errors " << kind << ": " << n << "\n";
  for (const json& m : r["error_samples"]) o << "  error: " << m.get<std::string>() << "\n";
  return o.str();
}

std::string agentic_turns_csv(const AgenticRun& run) {
  auto at = [&](Clock::time_point t) { return std::chrono::duration<double>(t - run.start).count(); };
  std::ostringstream o;
  o << std::fixed << std::setprecision(3)
    << "session,agent_type,turn,replica,ok,issued_s,first_token_s,done_s,prompt_tokens,cached_tokens,completion_tokens,attempts\n";
  for (const TurnResult& t : run.turns) {
    const RequestRecord& r = t.record;
    o << t.session << ',' << t.agent_type << ',' << t.turn << ',' << r.replica << ',' << (r.ok() ? 1 : 0) << ','
      << at(r.issued) << ',' << (r.arrivals.empty() ? -1.0 : at(r.arrivals.front().at)) << ',' << at(r.done) << ','
      << r.prompt_tokens << ',' << r.cached_tokens << ',' << r.completion_tokens << ',' << r.attempts
      << '\n';
  }
  return o.str();
}

}  // namespace sy::bench
