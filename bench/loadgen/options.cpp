#include "bench/loadgen/options.h"

#include <cmath>

#include "common/cli/args.h"

namespace sy::bench {

const char kUsage[] =
    "usage: switchyard-bench [--url http://127.0.0.1:8000] [--model NAME]\n"
    "         (--concurrency 1,4,16 | --rate 0.5,2) [--num-requests N | --duration S] [--warmup "
    "N]\n"
    "         [--workload FILE.jsonl | --prompt-tokens 256 [--endpoint completions|chat]] "
    "[--max-tokens 128]\n"
    "         [--temperature 0] [--priority P] [--extra-body JSON] [--timeout 300] [--seed 0]\n"
    "         [--multi-turn TURNS [--system-prompts 4] [--system-tokens 256]] [--no-keep-alive] "
    "[--json]\n"
    "Closed loop (--concurrency): each level sends --num-requests (default 4 per user, at least "
    "8).\n"
    "Open loop (--rate, Poisson): each level sends --num-requests (default 64) or arrivals for "
    "--duration.\n"
    "Multi-turn (closed loop): each user holds a chat conversation of TURNS turns of "
    "--prompt-tokens,\n"
    "  its history carrying the real replies, opened by one of the shared system prompts.\n"
    "Exit status: 0 when every request returned exactly max_tokens tokens of valid text, 2 "
    "otherwise.\n";

namespace {

using cli::UsageError;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t comma = s.find(',', pos);
    parts.push_back(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) return parts;
    pos = comma + 1;
  }
}

std::vector<int64_t> positive_ints(const std::string& flag, const std::string& s) {
  std::vector<int64_t> out;
  for (const std::string& p : split(s)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != p.size() || v < 1)
      throw UsageError("--" + flag + " needs positive integers, got '" + s + "'");
    out.push_back(v);
  }
  return out;
}

std::vector<double> positive_numbers(const std::string& flag, const std::string& s) {
  std::vector<double> out;
  for (const std::string& p : split(s)) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != p.size() || !(v > 0) || !std::isfinite(v))
      throw UsageError("--" + flag + " needs positive numbers, got '" + s + "'");
    out.push_back(v);
  }
  return out;
}

}  // namespace

BenchOptions parse_options(const std::vector<std::string>& argv) {
  const cli::Args a(argv,
                    {"url", "model", "workload", "endpoint", "prompt-tokens", "max-tokens",
                     "concurrency", "rate", "num-requests", "duration", "warmup", "temperature",
                     "priority", "extra-body", "timeout", "seed", "multi-turn", "system-prompts",
                     "system-tokens"},
                    {"no-keep-alive", "json", "help"});
  BenchOptions o;
  if (a.has("help")) {
    o.help = true;
    return o;
  }
  o.url = a.get_or("url", o.url);
  o.model = a.get_or("model", "");
  o.workload_path = a.get_or("workload", "");
  const std::string endpoint = a.get_or("endpoint", "completions");
  if (endpoint != "completions" && endpoint != "chat")
    throw UsageError("--endpoint is completions or chat, got '" + endpoint + "'");
  o.endpoint = endpoint == "chat" ? Endpoint::kChat : Endpoint::kCompletions;
  if (!o.workload_path.empty() && (a.has("prompt-tokens") || a.has("endpoint")))
    throw UsageError(
        "--workload sets the prompts and endpoints; drop --prompt-tokens and --endpoint");
  o.prompt_tokens = a.get_int("prompt-tokens", o.prompt_tokens);
  if (o.prompt_tokens < 1) throw UsageError("--prompt-tokens must be >= 1");
  o.request.max_tokens = a.get_int("max-tokens", o.request.max_tokens);
  if (o.request.max_tokens < 1) throw UsageError("--max-tokens must be >= 1");
  o.request.temperature = a.get_double("temperature", 0);
  if (!(o.request.temperature >= 0)) throw UsageError("--temperature must be >= 0");
  if (a.has("priority")) {
    // An integer goes as a number, a class name ("interactive") as a string.
    const std::string p = a.get("priority");
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(p, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    o.request.priority = (used != 0 && used == p.size()) ? nlohmann::json(v) : nlohmann::json(p);
  }
  if (a.has("extra-body")) {
    o.request.extra = nlohmann::json::parse(a.get("extra-body"), nullptr, false);
    if (o.request.extra.is_discarded() || !o.request.extra.is_object())
      throw UsageError("--extra-body must be a JSON object, got '" + a.get("extra-body") + "'");
  }

  if (a.has("concurrency")) o.concurrency = positive_ints("concurrency", a.get("concurrency"));
  if (a.has("rate")) o.rates = positive_numbers("rate", a.get("rate"));
  if (!o.concurrency.empty() && !o.rates.empty())
    throw UsageError("give --concurrency (closed loop) or --rate (open loop), not both");
  if (o.concurrency.empty() && o.rates.empty()) o.concurrency = {1};
  o.num_requests = a.get_int("num-requests", 0);
  if (o.num_requests < 0) throw UsageError("--num-requests must be >= 1");
  o.duration_s = a.get_double("duration", 0);
  if (o.duration_s < 0 || !std::isfinite(o.duration_s)) throw UsageError("--duration must be > 0");
  o.warmup = a.get_int("warmup", 0);
  if (o.warmup < 0) throw UsageError("--warmup must be >= 0");
  o.seed = static_cast<uint64_t>(a.get_int("seed", 0));
  const double timeout_s = a.get_double("timeout", 300);
  if (!(timeout_s > 0) || !std::isfinite(timeout_s)) throw UsageError("--timeout must be > 0");
  o.client.timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s * 1000)));
  o.client.keep_alive = !a.has("no-keep-alive");
  o.json = a.has("json");

  o.multi_turn.turns = a.get_int("multi-turn", 0);
  if (o.multi_turn.turns < 0) throw UsageError("--multi-turn must be >= 1");
  o.multi_turn.system_prompts = a.get_int("system-prompts", o.multi_turn.system_prompts);
  o.multi_turn.system_tokens = a.get_int("system-tokens", o.multi_turn.system_tokens);
  o.multi_turn.turn_tokens = o.prompt_tokens;
  if (o.multi_turn.turns == 0 && (a.has("system-prompts") || a.has("system-tokens")))
    throw UsageError("--system-prompts and --system-tokens go with --multi-turn");
  if (o.multi_turn.turns > 0) {
    if (!o.rates.empty() || !o.workload_path.empty())
      throw UsageError("--multi-turn is a closed-loop generated chat workload: drop --rate and --workload");
    if (o.multi_turn.system_prompts < 1 || o.multi_turn.system_tokens < 1)
      throw UsageError("--system-prompts and --system-tokens must be >= 1");
    o.endpoint = Endpoint::kChat;
  }
  return o;
}

std::vector<LevelSpec> BenchOptions::levels() const {
  std::vector<LevelSpec> out;
  for (int64_t c : concurrency) {
    LevelSpec s;
    s.mode = LevelSpec::Mode::kClosed;
    s.concurrency = c;
    s.num_requests =
        num_requests > 0 ? num_requests : (duration_s > 0 ? 0 : std::max<int64_t>(8, 4 * c));
    s.duration_s = duration_s;
    s.warmup = warmup;
    s.seed = seed;
    out.push_back(s);
  }
  for (double r : rates) {
    LevelSpec s;
    s.mode = LevelSpec::Mode::kOpen;
    s.rate = r;
    s.num_requests = num_requests > 0 ? num_requests : (duration_s > 0 ? 0 : 64);
    s.duration_s = duration_s;
    s.warmup = warmup;
    s.seed = seed;
    out.push_back(s);
  }
  return out;
}

}  // namespace sy::bench
