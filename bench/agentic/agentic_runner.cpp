#include "bench/agentic/agentic_runner.h"

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <limits>
#include <memory>
#include <thread>

namespace sy::bench {

namespace {

using nlohmann::json;

constexpr int64_t kTemplateSlack = 64;  // chat-template tokens a turn adds around its messages

class Sessions {
 public:
  Sessions(net::io_context& ioc, const Target& target, const AgenticSpec& spec,
           const AgenticRunOptions& options, AgenticRun& run)
      : ioc_(ioc), target_(target), spec_(spec), options_(options), run_(run) {}

  void start(const std::vector<SessionPlan>& plan) {
    run_.start = Clock::now();
    for (const SessionPlan& p : plan) {
      if (options_.max_run_s > 0 && p.arrival_s > options_.max_run_s)
        break;  // arrivals are in order
      auto s = std::make_shared<Live>(ioc_, p);
      s->timer.expires_at(run_.start + seconds(p.arrival_s));
      s->timer.async_wait([this, s](beast::error_code ec) {
        if (ec) return;
        ++run_.sessions_started;
        s->messages = opening_messages(spec_, s->plan);
        send(s);
      });
      live_.push_back(std::move(s));
    }
  }

 private:
  struct Live {
    Live(net::io_context& ioc, const SessionPlan& p) : plan(p), timer(ioc) {}
    const SessionPlan& plan;
    json messages;
    int64_t turn = 0;
    net::steady_timer timer;
  };
  using LivePtr = std::shared_ptr<Live>;

  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  void send(const LivePtr& s) {
    const TurnPlan& t = s->plan.turns[static_cast<size_t>(s->turn)];
    RequestRecord record;
    record.index = next_index_++;
    record.max_tokens = t.reply_tokens;
    auto req = std::make_shared<StreamingRequest>(
        ioc_, target_, pool_, options_.client, std::move(record), "/v1/chat/completions",
        agentic_turn_body(options_.model, s->messages, t.reply_tokens, s->plan.session_id()),
        [this, s](RequestRecord&& r) { finished(s, std::move(r)); });
    req->run();
  }

  void finished(const LivePtr& s, RequestRecord&& r) {
    const bool ok = r.ok();
    const int64_t context = r.prompt_tokens + r.completion_tokens;
    if (ok) s->messages.push_back({{"role", "assistant"}, {"content", r.text}});
    run_.turns.push_back({s->plan.id, s->plan.agent_type, s->turn, std::move(r)});
    run_.end = Clock::now();
    if (!ok) return void(++run_.sessions_failed);
    if (++s->turn >= static_cast<int64_t>(s->plan.turns.size()))
      return void(++run_.sessions_completed);
    const TurnPlan& next = s->plan.turns[static_cast<size_t>(s->turn)];
    if (context + next.tool_tokens + next.reply_tokens + kTemplateSlack > spec_.max_context_tokens)
      return void(++run_.sessions_context_capped);
    const auto send_at = Clock::now() + seconds(next.think_s);
    if (options_.max_run_s > 0 && send_at > run_.start + seconds(options_.max_run_s))
      return void(++run_.sessions_time_capped);
    // The tool's output goes in as a user message: every chat template takes that role.
    s->messages.push_back(
        {{"role", "user"}, {"content", tool_output(s->plan, s->turn, next.tool_tokens)}});
    s->timer.expires_at(send_at);
    s->timer.async_wait([this, s](beast::error_code ec) {
      if (!ec) send(s);
    });
  }

  net::io_context& ioc_;
  const Target& target_;
  const AgenticSpec& spec_;
  const AgenticRunOptions& options_;
  AgenticRun& run_;
  ConnectionPool pool_;
  std::vector<LivePtr> live_;
  int64_t next_index_ = 0;
};

}  // namespace

std::string agentic_turn_body(const std::string& model, const json& messages, int64_t max_tokens,
                              const std::string& session_id) {
  json body = {{"model", model},
               {"messages", messages},
               {"max_tokens", max_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"ignore_eos", true},  // every reply has exactly max_tokens tokens
               {"temperature", 0},
               {"user", session_id}};
  return body.dump();
}

bool parse_load_sample(const std::string& status_json, LoadSample& out) {
  const json j = json::parse(status_json, nullptr, false);
  if (!j.is_object() || !j.contains("replicas") || !j["replicas"].is_array()) return false;
  out.in_flight.clear();
  out.prefill_s_per_token.clear();
  for (const json& r : j["replicas"]) {
    if (!r.is_object() || r.value("state", "") != "ready") continue;
    const json load = r.value("load", json::object());
    out.in_flight.push_back(load.value("in_flight", int64_t{0}));
    out.prefill_s_per_token.push_back(r.value("prefill_cost_samples", int64_t{1}) > 0
                                          ? r.value("prefill_s_per_token", 0.0)
                                          : std::numeric_limits<double>::quiet_NaN());
  }
  return true;
}

AgenticRun run_agentic(const Target& target, const AgenticSpec& spec,
                       const std::vector<SessionPlan>& plan, const AgenticRunOptions& options) {
  AgenticRun run;
  run.sessions_planned = static_cast<int64_t>(plan.size());
  net::io_context ioc;
  Sessions sessions(ioc, target, spec, options, run);
  sessions.start(plan);
  // The sampler has its own io_context: http_get runs one to completion.
  std::atomic<bool> stop{false};
  std::vector<LoadSample> samples;
  int64_t sample_errors = 0;
  std::thread sampler;
  if (!options.admin_url.empty())
    sampler = std::thread([&] {
      net::io_context sioc;
      const Target admin = resolve_target(sioc, options.admin_url);
      const auto interval = std::chrono::duration<double>(options.sample_interval_s);
      while (!stop.load()) {
        LoadSample s;
        s.at_s = std::chrono::duration<double>(Clock::now() - run.start).count();
        try {
          const auto [status, body] =
              http_get(sioc, admin, "/admin/status", std::chrono::seconds(5));
          if (status == 200 && parse_load_sample(body, s))
            samples.push_back(std::move(s));
          else
            ++sample_errors;
        } catch (const std::exception&) {
          ++sample_errors;
        }
        std::this_thread::sleep_for(interval);
      }
    });
  ioc.run();
  stop = true;
  if (sampler.joinable()) sampler.join();
  run.load = std::move(samples);
  run.load_sample_errors = sample_errors;
  if (run.turns.empty()) run.end = Clock::now();
  return run;
}

}  // namespace sy::bench
