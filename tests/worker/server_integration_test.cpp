// switchyard-worker serve as clients see it: a real process on a loopback port chosen by
// the OS, the qwen3-tiny fixture model, and plain HTTP clients. Checks readiness, that
// HTTP results equal `generate`'s and the goldens, that concurrent streams equal solo
// runs, bad requests, cancellation by a closed connection, resume ids, KV events with
// the fingerprint the gateway computes, the KV host tier (--kv-host-gb), and a clean
// SIGTERM.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <map>
#include <set>

#include "common/model_identity.h"
#include "fixture_util.h"
#include "policy/block_hash.h"
#include "worker_process.h"

namespace sy::testing {
namespace {

using nlohmann::json;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

const char kModel[] = "qwen3-tiny-bf16.gguf";
constexpr int kKvBlocks = 256;  // 4096 tokens: the context limit the server reports

std::vector<std::string> serve_args(const std::string& boot_id) {
  return {"--model",
          fixture_path(kModel),
          "--boot-id",
          boot_id,
          "--kv-blocks",
          std::to_string(kKvBlocks),
          "--max-num-seqs",
          "16",
          "--served-model-name",
          "tiny"};
}

// Polls /ready until 200 (the engine ran its warm-up step).
json wait_ready(uint16_t port) {
  for (int i = 0; i < 600; ++i) {
    HttpResult r = http_request(port, "GET", "/ready");
    if (r.status == 200) return r.json();
    std::this_thread::sleep_for(50ms);
  }
  ADD_FAILURE() << "worker never became ready";
  return {};
}

// The value of one metric series in /metrics text (-1 when absent).
double metric(uint16_t port, const std::string& series) {
  const std::string text = http_request(port, "GET", "/metrics").body;
  const size_t p = text.find("\n" + series + " ");
  if (p == std::string::npos) return -1;
  return std::stod(text.substr(p + series.size() + 2));
}

// Polls until the metric equals `want` (or the time is up); returns the last value.
double wait_metric(uint16_t port, const std::string& series, double want) {
  double v = -1;
  for (int i = 0; i < 400; ++i) {
    v = metric(port, series);
    if (v == want) break;
    std::this_thread::sleep_for(25ms);
  }
  return v;
}

struct Generated {
  std::vector<int32_t> ids;
  std::string text;
  json finish;
  bool clean = false;  // ended with a finish event
  std::vector<int32_t> preempted;  // recompute_tokens of each `preempted` event
};

// POST /internal/generate, collecting its events.
Generated internal_generate(uint16_t port, const json& body) {
  SseStream s(port, "POST", "/internal/generate", body.dump());
  Generated g;
  EXPECT_EQ(s.status(), 200);
  for (const auto& ev : s.rest()) {
    const json d = json::parse(ev.data);
    if (ev.type == "tokens") {
      EXPECT_EQ(d["index"].get<size_t>(),
                body.value("resume_ids", json::array()).size() + g.ids.size());
      for (int32_t id : d["ids"]) g.ids.push_back(id);
      g.text += d["text"].get<std::string>();
    } else if (ev.type == "finish") {
      g.finish = d;
      g.text += d["text"].get<std::string>();
      g.clean = true;
    } else if (ev.type == "preempted") {
      g.preempted.push_back(d["recompute_tokens"].get<int32_t>());
    } else {
      ADD_FAILURE() << "unexpected event " << ev.type << ": " << ev.data;
    }
  }
  return g;
}

// A streamed completion's text, and whether it ended with [DONE].
struct Streamed {
  std::string text;
  std::string finish_reason;
  bool done = false;
  json usage;
};

Streamed stream_completion(uint16_t port, const std::string& path, json body) {
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  SseStream s(port, "POST", path, body.dump());
  Streamed out;
  EXPECT_EQ(s.status(), 200);
  for (const auto& ev : s.rest()) {
    EXPECT_EQ(ev.type, "message") << ev.data;
    if (ev.data == "[DONE]") {
      out.done = true;
      continue;
    }
    const json c = json::parse(ev.data);
    if (c["choices"].empty()) {
      out.usage = c["usage"];
      continue;
    }
    const json& ch = c["choices"][0];
    if (ch.contains("text"))
      out.text += ch["text"].get<std::string>();
    else if (ch["delta"].contains("content"))
      out.text += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) out.finish_reason = ch["finish_reason"];
  }
  EXPECT_TRUE(s.complete());
  return out;
}

// `switchyard-worker generate --json` for the same ids.
json cli_generate(const std::vector<int32_t>& ids, int max_tokens) {
  std::string list;
  for (size_t i = 0; i < ids.size(); ++i) list += (i ? "," : "") + std::to_string(ids[i]);
  const std::string cmd = std::string(SY_BIN_DIR) + "/switchyard-worker generate --model " +
                          fixture_path(kModel) + " --prompt-ids " + list + " --max-tokens " +
                          std::to_string(max_tokens) + " --ignore-eos --json 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) ::pclose(p);
  return json::parse(out, nullptr, false);
}

class WorkerServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    worker_ = new WorkerProcess(serve_args("suite-boot"));
    ASSERT_NE(worker_->port(), 0) << "the worker did not print its URL";
    ready_ = wait_ready(worker_->port());
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(worker_->terminate(), 0) << "SIGTERM must end the worker cleanly";
    delete worker_;
  }
  static uint16_t port() { return worker_->port(); }

  static WorkerProcess* worker_;
  static json ready_;
};
WorkerProcess* WorkerServerTest::worker_ = nullptr;
json WorkerServerTest::ready_;

TEST_F(WorkerServerTest, ReadyHealthAndModels) {
  EXPECT_EQ(ready_["ready"], true);
  EXPECT_EQ(ready_["boot_id"], "suite-boot");
  EXPECT_EQ(ready_["pid"], worker_->pid());
  EXPECT_EQ(ready_["block_size"], 16);
  EXPECT_EQ(ready_["max_num_seqs"], 16);
  EXPECT_EQ(ready_["max_model_len"], 4096);
  EXPECT_EQ(http_request(port(), "GET", "/health").status, 200);
  const json models = http_request(port(), "GET", "/v1/models").json();
  EXPECT_EQ(models["data"][0]["id"], "tiny");
  EXPECT_EQ(metric(port(), "switchyard_worker_kv_blocks_capacity"), kKvBlocks);
  EXPECT_EQ(metric(port(), "switchyard_worker_ready"), 1);
}

TEST_F(WorkerServerTest, GreedyResultsEqualGenerateAndTheGoldens) {
  const json golden = load_golden("qwen3-tiny");
  for (size_t i = 0; i < golden["prompts"].size(); ++i) {
    const auto ids = golden["prompts"][i]["ids"].get<std::vector<int32_t>>();
    const auto want = golden["prompts"][i]["greedy_32"].get<std::vector<int32_t>>();
    const json cli = cli_generate(ids, 32);
    ASSERT_TRUE(cli.is_object()) << "generate failed";
    EXPECT_EQ(cli["token_ids"].get<std::vector<int32_t>>(), want) << "prompt " << i;

    const Generated g = internal_generate(port(), {{"request_id", "golden-" + std::to_string(i)},
                                                   {"prompt_ids", ids},
                                                   {"max_tokens", 32},
                                                   {"temperature", 0},
                                                   {"ignore_eos", true},
                                                   {"skip_special_tokens", false}});
    EXPECT_TRUE(g.clean);
    EXPECT_EQ(g.ids, want) << "prompt " << i;
    EXPECT_EQ(g.text, cli["text"].get<std::string>()) << "prompt " << i;

    const json body = {{"model", "tiny"},  {"prompt", ids},      {"max_tokens", 32},
                       {"temperature", 0}, {"ignore_eos", true}, {"skip_special_tokens", false}};
    const HttpResult r = post_json(port(), "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const json c = r.json();
    EXPECT_EQ(c["choices"][0]["text"], cli["text"]) << "prompt " << i;
    EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(c["usage"]["prompt_tokens"], ids.size());
    EXPECT_EQ(c["usage"]["completion_tokens"], 32);
    EXPECT_EQ(c["usage"]["total_tokens"], ids.size() + 32);
    EXPECT_TRUE(c["usage"]["prompt_tokens_details"].contains("cached_tokens"));
    EXPECT_EQ(c["id"].get<std::string>().rfind("cmpl-", 0), 0u);

    const Streamed s = stream_completion(port(), "/v1/completions", body);
    EXPECT_EQ(s.text, cli["text"].get<std::string>()) << "prompt " << i;
    EXPECT_EQ(s.finish_reason, "length");
    EXPECT_TRUE(s.done);
    EXPECT_EQ(s.usage["completion_tokens"], 32);
  }
}

TEST_F(WorkerServerTest, TextPromptsAndChatStreamEqualTheirNonStreamedResults) {
  const json golden = load_golden("qwen3-tiny");
  const json completion = {{"prompt", golden["prompts"][1]["text"]},
                           {"max_tokens", 20},
                           {"temperature", 0},
                           {"ignore_eos", true}};
  const json c = post_json(port(), "/v1/completions", completion).json();
  EXPECT_EQ(c["usage"]["prompt_tokens"],
            golden["prompts"][1]["ids"].size());  // tokenized as the goldens
  EXPECT_EQ(stream_completion(port(), "/v1/completions", completion).text, c["choices"][0]["text"].get<std::string>());

  json chat = {{"messages", golden["chat"][0]["messages"]},
               {"max_completion_tokens", 12},
               {"temperature", 0},
               {"ignore_eos", true}};
  if (golden["chat"][0].contains("kwargs"))
    chat["chat_template_kwargs"] = golden["chat"][0]["kwargs"];
  const HttpResult r = post_json(port(), "/v1/chat/completions", chat);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["usage"]["prompt_tokens"],
            golden["chat"][0]["ids"].size());  // the template as transformers renders it
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  const Streamed s = stream_completion(port(), "/v1/chat/completions", chat);
  EXPECT_EQ(s.text, j["choices"][0]["message"]["content"].get<std::string>());
  EXPECT_TRUE(s.done);
}

TEST_F(WorkerServerTest, SixteenConcurrentStreamsEqualSoloRuns) {
  const json golden = load_golden("qwen3-tiny");
  std::vector<json> bodies;
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> ids = golden["prompts"][i % 5]["ids"];
    ids.push_back(100 + 37 * i);  // 16 different prompts
    bodies.push_back(
        {{"prompt", ids}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}});
  }
  std::vector<std::string> solo;
  for (const auto& b : bodies) {
    const HttpResult r = post_json(port(), "/v1/completions", b);
    ASSERT_EQ(r.status, 200) << r.body;
    solo.push_back(r.json()["choices"][0]["text"]);
  }
  std::vector<std::future<Streamed>> runs;
  for (const auto& b : bodies)
    runs.push_back(std::async(std::launch::async,
                              [&, b] { return stream_completion(port(), "/v1/completions", b); }));
  for (size_t i = 0; i < runs.size(); ++i) {
    const Streamed s = runs[i].get();
    EXPECT_TRUE(s.done) << i;
    EXPECT_EQ(s.text, solo[i]) << "request " << i;
  }
}

struct BadRow {
  std::string name, method, path, body, headers;
  int status;
  std::string code;   // "" = null/any
  std::string param;  // "" = any
};

TEST_F(WorkerServerTest, BadRequestsGetTheirErrorsAndHarmNoOtherRequest) {
  // A long request streams meanwhile; it must finish intact. Long enough (2000 tokens)
  // that it is surely still running when the duplicate-id row comes: with 200, a loaded
  // CI machine once finished it first (a 200 where the row expects 409).
  constexpr int kBystanderTokens = 2000;
  const json golden = load_golden("qwen3-tiny");
  const json long_body = {{"request_id", "bystander"},
                          {"prompt_ids", golden["prompts"][0]["ids"]},
                          {"max_tokens", kBystanderTokens},
                          {"temperature", 0},
                          {"ignore_eos", true}};
  auto bystander =
      std::async(std::launch::async, [&] { return internal_generate(port(), long_body); });

  const std::string chat_ok = R"("messages":[{"role":"user","content":"hi"}])";
  std::string too_many_ids = "[";
  for (int i = 0; i < 5000; ++i) too_many_ids += (i ? ",1" : "1");
  too_many_ids += "]";
  const std::vector<BadRow> rows = {
      // First, while the bystander surely still runs (a faster engine once finished its
      // tokens before a later row came).
      {"internal_duplicate_id", "POST", "/internal/generate",
       R"({"request_id":"bystander","prompt_ids":[1],"max_tokens":4})", "", 409,
       "duplicate_request_id", "request_id"},
      {"malformed_json", "POST", "/v1/completions", R"({"prompt":)", "", 400, "", ""},
      {"wrong_type", "POST", "/v1/completions", R"({"prompt":"x","max_tokens":"ten"})", "", 400, "",
       "max_tokens"},
      {"out_of_range", "POST", "/v1/completions", R"({"prompt":"x","temperature":-2})", "", 400, "",
       "temperature"},
      {"unknown_model", "POST", "/v1/completions", R"({"model":"gpt-9","prompt":"x"})", "", 404,
       "model_not_found", "model"},
      {"prompt_longer_than_context", "POST", "/v1/completions",
       R"({"prompt":)" + too_many_ids + "}", "", 400, "context_length_exceeded", "prompt"},
      {"max_tokens_beyond_context", "POST", "/v1/completions",
       R"({"prompt":"x","max_tokens":5000})", "", 400, "context_length_exceeded", "max_tokens"},
      {"chat_max_tokens_beyond_context", "POST", "/v1/chat/completions",
       "{" + chat_ok + R"(,"max_tokens":4095})", "", 400, "context_length_exceeded", ""},
      {"empty_messages", "POST", "/v1/chat/completions", R"({"messages":[]})", "", 400, "",
       "messages"},
      {"malformed_message", "POST", "/v1/chat/completions",
       R"({"messages":[{"role":"user","content":{"a":1}}]})", "", 400, "", "messages"},
      {"unknown_role", "POST", "/v1/chat/completions",
       R"({"messages":[{"role":"wizard","content":"x"}]})", "", 400, "", "messages"},
      {"ids_out_of_vocabulary", "POST", "/v1/completions", R"({"prompt":[1,2,151680]})", "", 400,
       "", "prompt"},
      {"absurd_n", "POST", "/v1/completions", R"({"prompt":"x","n":1000000})", "", 400, "", "n"},
      {"best_of", "POST", "/v1/chat/completions", "{" + chat_ok + R"(,"best_of":4})", "", 400, "",
       "best_of"},
      {"invalid_utf8", "POST", "/v1/completions", "{\"prompt\":\"ab\xC3\x28\"}", "", 400, "", ""},
      {"bad_priority_header", "POST", "/v1/completions", R"({"prompt":"x"})",
       "X-Priority: soon\r\n", 400, "", "X-Priority"},
      {"body_too_large", "POST", "/v1/completions",
       R"({"prompt":")" + std::string(5 << 20, 'a') + "\"}", "", 413, "request_too_large", ""},
      {"internal_ids_out_of_vocabulary", "POST", "/internal/generate",
       R"({"request_id":"x1","prompt_ids":[1,999999],"max_tokens":4})", "", 400, "", "prompt_ids"},
      {"internal_resume_beyond_context", "POST", "/internal/generate",
       R"({"request_id":"x2","prompt_ids":[1],"max_tokens":4096})", "", 400,
       "context_length_exceeded", "max_tokens"},
      {"unknown_path", "GET", "/v2/everything", "", "", 404, "not_found", ""},
      {"wrong_method", "GET", "/v1/completions", "", "", 405, "method_not_allowed", ""},
  };
  // Wait until the bystander runs, so that the duplicate id is live.
  for (int i = 0; i < 400 && metric(port(), "switchyard_worker_requests_running") < 1; ++i)
    std::this_thread::sleep_for(5ms);
  for (const auto& row : rows) {
    const HttpResult r = http_request(port(), row.method, row.path, row.body, row.headers);
    EXPECT_EQ(r.status, row.status) << row.name << ": " << r.body;
    const json e = r.json();
    ASSERT_TRUE(e.is_object() && e.contains("error")) << row.name << ": " << r.body;
    EXPECT_TRUE(e["error"]["message"].is_string()) << row.name;
    EXPECT_EQ(e["error"]["type"], row.status >= 500 ? "server_error" : "invalid_request_error")
        << row.name;
    if (!row.code.empty()) {
      EXPECT_EQ(e["error"]["code"], row.code) << row.name;
    }
    if (!row.param.empty()) {
      EXPECT_EQ(e["error"]["param"], row.param) << row.name;
    }
    EXPECT_EQ(r.content_type, "application/json") << row.name;
  }
  const Generated g = bystander.get();
  EXPECT_TRUE(g.clean);
  EXPECT_EQ(g.ids.size(), static_cast<size_t>(kBystanderTokens));
  // And the server still serves.
  const HttpResult ok =
      post_json(port(), "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 3}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(WorkerServerTest, ClosedConnectionCancelsTheRequestAndFreesItsBlocks) {
  const double aborted = metric(port(), "switchyard_worker_requests_aborted_total");
  {  // streaming: close after the first chunk
    const json body = {{"prompt", "Once upon a time"},
                       {"max_tokens", 3000},
                       {"temperature", 0},
                       {"ignore_eos", true},
                       {"stream", true}};
    SseStream s(port(), "POST", "/v1/completions", body.dump());
    ASSERT_EQ(s.status(), 200);
    std::vector<http::SseEvent> evs;
    ASSERT_TRUE(s.next(evs));
    // The engine updates its gauges after the step that sent the first token.
    EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_running", 1), 1);
    EXPECT_GT(metric(port(), "switchyard_worker_kv_blocks_used"), 0);
    s.close();
  }
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_running", 0), 0);
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_kv_blocks_used", 0), 0);
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_aborted_total", aborted + 1),
            aborted + 1);
  {  // non-streaming: close while the handler waits for the engine
    SseStream s(port(), "POST", "/internal/generate",
                json{{"request_id", "to-cancel"},
                     {"prompt_ids", {1, 2, 3}},
                     {"max_tokens", 3000},
                     {"ignore_eos", true}}
                    .dump());
    std::vector<http::SseEvent> evs;
    ASSERT_TRUE(s.next(evs));
    s.close();
  }
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_aborted_total", aborted + 2),
            aborted + 2);
  for (int i = 0; i < 2; ++i) {
    net::io_context ioc;
    tcp::socket sock(ioc);
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port()));
    const std::string body =
        json{{"prompt", "x"}, {"max_tokens", 3000}, {"ignore_eos", true}}.dump();
    net::write(sock, net::buffer(request_text("POST", "/v1/completions", body, {})));
    EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_running", 1), 1);
    sock.close();  // before any response byte
    EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_running", 0), 0);
  }
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_requests_aborted_total", aborted + 4),
            aborted + 4);
  EXPECT_EQ(wait_metric(port(), "switchyard_worker_kv_blocks_used", 0), 0);
}

TEST_F(WorkerServerTest, ResumeIdsContinueExactly) {
  const json golden = load_golden("qwen3-tiny");
  const std::vector<int32_t> prompt = golden["prompts"][4]["ids"];
  for (const json& sampling :
       {json{{"temperature", 0}}, json{{"temperature", 0.9}, {"top_p", 0.95}, {"seed", 1234}}}) {
    json full_req = {
        {"request_id", "full"}, {"prompt_ids", prompt}, {"max_tokens", 30}, {"ignore_eos", true}};
    full_req.update(sampling);
    const Generated full = internal_generate(port(), full_req);
    ASSERT_EQ(full.ids.size(), 30u);
    const std::vector<int32_t> head(full.ids.begin(), full.ids.begin() + 11);
    json resume_req = full_req;
    resume_req["request_id"] = "resumed";
    resume_req["resume_ids"] = head;
    const Generated rest = internal_generate(port(), resume_req);
    EXPECT_EQ(rest.ids, std::vector<int32_t>(full.ids.begin() + 11, full.ids.end()))
        << sampling.dump();
    EXPECT_EQ(rest.finish["usage"]["completion_tokens"], 30);
    // The text of the continuation is the rest of the uninterrupted text.
    const Generated first = internal_generate(port(), [&] {
      json r = full_req;
      r["request_id"] = "head";
      r["max_tokens"] = 11;
      return r;
    }());
    EXPECT_EQ(first.ids, head);
    EXPECT_EQ(first.text + rest.text, full.text) << sampling.dump();
  }
}

TEST_F(WorkerServerTest, KvEventsShowStoredHashesAndTheCacheIsUsed) {
  // The fingerprint the gateway computes from the model file is the worker's.
  const uint64_t fingerprint =
      policy::model_fingerprint(model_identity_description(fixture_path(kModel)));
  EXPECT_EQ(ready_["model_fingerprint"].get<uint64_t>(), fingerprint);

  SseStream events(port(), "GET", "/internal/kv-events");
  ASSERT_EQ(events.status(), 200);
  std::vector<http::SseEvent> evs;
  ASSERT_TRUE(events.next(evs));
  json snapshot = json::parse(evs[0].data);
  EXPECT_EQ(snapshot["type"], "stored");
  uint64_t last_seq = snapshot["seq"];

  std::vector<int32_t> prompt;
  for (int i = 0; i < 70; ++i) prompt.push_back(1000 + 7 * i);  // 4 full blocks and 6 tokens
  const json body = {
      {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true}};
  const json first = post_json(port(), "/v1/completions", body).json();
  const std::vector<uint64_t> want = policy::prefix_block_hashes(fingerprint, prompt, 16);
  ASSERT_EQ(want.size(), 4u);
  std::set<uint64_t> stored;
  while (!std::all_of(want.begin(), want.end(), [&](uint64_t h) { return stored.count(h); })) {
    ASSERT_TRUE(events.next(evs)) << "the event stream ended";
    for (const auto& ev : evs) {
      if (ev.type != "message") continue;  // pings are comments, not events
      const json e = json::parse(ev.data);
      EXPECT_GT(e["seq"].get<uint64_t>(), last_seq);
      last_seq = e["seq"];
      if (e["type"] == "stored")
        for (const auto& h : e["hashes"]) stored.insert(h.get<uint64_t>());
    }
  }
  events.close();
  // The same prompt again is served from the cache, with the same output.
  const json second = post_json(port(), "/v1/completions", body).json();
  EXPECT_GE(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 48);
  EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_GE(metric(port(), "switchyard_worker_prefix_cache_hit_tokens_total"), 48);
}

TEST_F(WorkerServerTest, SharedPrefixOf600TokensComesFromTheCacheWithTheSameOutput) {
  std::vector<int32_t> shared;
  for (int i = 0; i < 600; ++i) shared.push_back(2000 + (i * 131) % 50000);
  std::vector<int32_t> first = shared, second = shared;
  for (int i = 0; i < 8; ++i) {
    first.push_back(500 + i);
    second.push_back(900 + i);
  }
  auto body = [](const std::vector<int32_t>& ids) {
    return json{{"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
  };
  ASSERT_EQ(post_json(port(), "/v1/completions", body(first)).status, 200);
  const json c = post_json(port(), "/v1/completions", body(second)).json();
  EXPECT_GE(c["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 512) << c.dump();
  // The same text as the offline generator, which has no prefix cache.
  const json cli = cli_generate(second, 8);
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(c["choices"][0]["text"], cli["text"]);
}

TEST_F(WorkerServerTest, LogprobsAndSamplingFieldsReachTheEngine) {
  const json golden = load_golden("qwen3-tiny");
  const std::vector<int32_t> ids = golden["prompts"][0]["ids"];
  const std::vector<int32_t> greedy = golden["prompts"][0]["greedy_32"];
  // Completions logprobs: one entry per token; greedy picks the best alternative.
  json c = post_json(port(), "/v1/completions",
                     {{"prompt", ids},
                      {"max_tokens", 6},
                      {"temperature", 0},
                      {"ignore_eos", true},
                      {"logprobs", 2}})
               .json();
  const json& lp = c["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u) << c.dump();
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(lp["text_offset"][i], joined.size());
    joined += lp["tokens"][i].get<std::string>();
    EXPECT_LE(lp["top_logprobs"][i].size(), 2u);
    double best = -1e9;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items())
      best = std::max(best, v.get<double>());
    EXPECT_EQ(best, lp["token_logprobs"][i].get<double>());
  }
  EXPECT_EQ(joined, c["choices"][0]["text"].get<std::string>());  // single-byte-complete tokens here
  // Chat logprobs: content entries with bytes; the first alternative is the chosen token.
  c = post_json(port(), "/v1/chat/completions",
                {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                 {"max_tokens", 5},
                 {"temperature", 0},
                 {"ignore_eos", true},
                 {"logprobs", true},
                 {"top_logprobs", 3}})
          .json();
  const json& content = c["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u) << c.dump();
  for (const auto& e : content) {
    EXPECT_TRUE(e["bytes"].is_array());
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_EQ(e["top_logprobs"][0]["logprob"], e["logprob"]);
    EXPECT_EQ(e["top_logprobs"][0]["bytes"], e["bytes"]);
  }
  // A stop token ends the output with "stop"; the stop token is counted, not shown.
  const json base = {{"prompt", ids}, {"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}};
  json stopped = base;
  const size_t first = std::find(greedy.begin(), greedy.end(), greedy[4]) - greedy.begin();
  stopped["stop_token_ids"] = {greedy[4]};
  c = post_json(port(), "/v1/completions", stopped).json();
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["usage"]["completion_tokens"], first + 1);
  // A stop string ends the text before it.
  const std::string full = post_json(port(), "/v1/completions", base).json()["choices"][0]["text"];
  const std::string stop = full.substr(6, 3);
  json with_stop = base;
  with_stop["stop"] = stop;
  c = post_json(port(), "/v1/completions", with_stop).json();
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["choices"][0]["text"], full.substr(0, full.find(stop)));
  // The same seed draws the same tokens; the priority header is accepted.
  json seeded = {
      {"prompt", ids}, {"max_tokens", 12}, {"temperature", 1.5}, {"seed", 7}, {"ignore_eos", true}};
  const std::string a = post_json(port(), "/v1/completions", seeded).json()["choices"][0]["text"];
  const HttpResult b =
      http_request(port(), "POST", "/v1/completions", seeded.dump(), "X-Priority: batch\r\n");
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(b.json()["choices"][0]["text"], a);
}

// A cache too small for the requests in flight: the engine preempts the least urgent
// (their blocks freed, their context computed again later). Each preempted stream is
// told so (`event: preempted`, with the context it recomputes) and still ends exactly as
// when it ran alone.
TEST(WorkerServerPreemption, PreemptedStreamsAreToldAndStillEqualSoloRuns) {
  WorkerProcess w({"--model", fixture_path(kModel), "--boot-id", "preempt-boot", "--kv-blocks", "20",
                   "--max-num-seqs", "8", "--prefill-chunk", "32"});
  ASSERT_NE(w.port(), 0);
  wait_ready(w.port());
  const json golden = load_golden("qwen3-tiny");
  std::vector<json> bodies;
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> ids = golden["prompts"][i % 5]["ids"];
    for (int k = 0; ids.size() < 48u + 6u * static_cast<size_t>(i); ++k) ids.push_back(200 + 31 * i + k);
    bodies.push_back({{"request_id", "p" + std::to_string(i)}, {"prompt_ids", ids}, {"max_tokens", 64},
                      {"ignore_eos", true}, {"temperature", 0}, {"priority", i % 3}});
  }
  std::vector<Generated> solo;
  for (const json& b : bodies) solo.push_back(internal_generate(w.port(), b));
  const double before = metric(w.port(), "switchyard_worker_preemptions_total");
  std::vector<std::future<Generated>> runs;
  for (const json& b : bodies)
    runs.push_back(std::async(std::launch::async, [&w, b] { return internal_generate(w.port(), b); }));
  size_t told = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Generated g = runs[i].get();
    EXPECT_TRUE(g.clean) << i;
    EXPECT_EQ(g.ids, solo[i].ids) << "request " << i;
    EXPECT_EQ(g.text, solo[i].text) << "request " << i;
    EXPECT_TRUE(solo[i].preempted.empty()) << i;
    for (int32_t n : g.preempted) {
      EXPECT_GE(n, static_cast<int32_t>(bodies[i]["prompt_ids"].size())) << i;
      EXPECT_LE(n, static_cast<int32_t>(bodies[i]["prompt_ids"].size()) + 64) << i;
    }
    told += g.preempted.size();
  }
  const double preemptions = metric(w.port(), "switchyard_worker_preemptions_total") - before;
  EXPECT_GT(preemptions, 0) << "the cache (20 blocks) holds three of the eight requests";
  EXPECT_EQ(static_cast<double>(told), preemptions);
}

// serve --kv-host-gb: a prefix that another request's blocks evicted from a cache of 48
// blocks comes back from the host tier (usage's cached_tokens, the tier's counters) with
// the text of the offline generator, which has no prefix cache.
TEST(WorkerServerHostTier, AnEvictedPrefixIsServedFromTheHostTier) {
  WorkerProcess w({"--model", fixture_path(kModel), "--boot-id", "host-tier-boot", "--kv-blocks", "48",
                   "--kv-host-gb", "0.05"});
  ASSERT_NE(w.port(), 0);
  wait_ready(w.port());
  auto prompt = [](int base, int tail) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 600; ++i) ids.push_back(base + (i * 131) % 50000);
    for (int i = 0; i < 4; ++i) ids.push_back(tail + i);
    return json{{"prompt", ids}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
  };
  ASSERT_EQ(post_json(w.port(), "/v1/completions", prompt(2000, 500)).status, 200);
  ASSERT_EQ(post_json(w.port(), "/v1/completions", prompt(3000, 500)).status, 200);  // evicts the first
  EXPECT_GT(metric(w.port(), "switchyard_worker_kv_host_blocks_saved_total"), 0);
  // (allocated in the background, in use from a step after it was ready)
  EXPECT_GT(metric(w.port(), "switchyard_worker_kv_host_blocks_capacity"), 0);
  const json again = prompt(2000, 900);
  const json c = post_json(w.port(), "/v1/completions", again).json();
  EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 592) << c.dump();
  EXPECT_GT(metric(w.port(), "switchyard_worker_kv_host_blocks_loaded_total"), 0);
  const json cli = cli_generate(again["prompt"].get<std::vector<int32_t>>(), 8);
  ASSERT_TRUE(cli.is_object());
  EXPECT_EQ(c["choices"][0]["text"], cli["text"]);
}

TEST(WorkerServerShutdown, SigtermEndsStreamsInFlightWithAnErrorAndExitsCleanly) {
  WorkerProcess w(serve_args("shutdown-boot"));
  ASSERT_NE(w.port(), 0);
  wait_ready(w.port());
  SseStream s(w.port(), "POST", "/v1/completions",
              json{{"prompt", "Once"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}
                  .dump());
  std::vector<http::SseEvent> evs;
  ASSERT_TRUE(s.next(evs));
  SseStream kv(w.port(), "GET", "/internal/kv-events");
  ASSERT_TRUE(kv.next(evs));  // the snapshot
  auto code = std::async(std::launch::async, [&] { return w.terminate(); });
  std::vector<http::SseEvent> rest = s.rest();
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.back().type, "error") << rest.back().data;  // not a clean [DONE]
  for (const auto& e : rest) EXPECT_NE(e.data, "[DONE]");
  kv.rest();
  EXPECT_TRUE(kv.complete());  // the event stream was ended, not cut
  EXPECT_EQ(code.get(), 0);
}

}  // namespace
}  // namespace sy::testing
