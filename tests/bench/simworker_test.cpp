// switchyard-simworker as a process, over HTTP: the worker's /ready shape, token streams
// that decode to real text, resume and seeds, the time it is told to take (lower bounds
// only), its prefix cache seen through usage and /internal/kv-events (hashes checked
// against policy/block_hash), eviction, cancellation and bad requests.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>

#include "bench/simworker/shared_timeline.h"
#include "common/model_identity.h"
#include "common/model_source.h"
#include "common/protocol/internal_api.h"
#include "common/tokenizer/tokenizer.h"
#include "fixture_util.h"
#include "policy/block_hash.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;
using testing::SseStream;
using testing::WorkerProcess;

const std::string kSimworker = std::string(SY_BIN_DIR) + "/switchyard-simworker";

std::string model_path() { return testing::fixture_path("qwen3-tiny-bf16.gguf"); }

WorkerProcess start_sim(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--model", model_path(), "--boot-id", "sim-test", "--kv-blocks", "16"};
  args.insert(args.end(), extra.begin(), extra.end());
  return WorkerProcess(args, kSimworker);
}

nlohmann::json generate_body(const std::string& id, const std::vector<int32_t>& prompt, int max_tokens,
                             uint64_t seed, const std::vector<int32_t>& resume = {}) {
  return {{"request_id", id}, {"prompt_ids", prompt}, {"resume_ids", resume}, {"max_tokens", max_tokens}, {"seed", seed}};
}

std::vector<int32_t> prompt_of(size_t n, int32_t base) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<int32_t>(i * 13 % 3000);
  return v;
}

// One /internal/generate stream, read to its end, with the time of each token event.
struct Generated {
  int status = 0;
  std::vector<InternalTokens> tokens;
  Clock::time_point sent;
  std::vector<Clock::duration> token_at;  // since the request was sent
  InternalFinish finish;
  bool finished = false;
  std::string error;
  std::vector<int32_t> ids() const {
    std::vector<int32_t> out;
    for (const auto& t : tokens) out.insert(out.end(), t.ids.begin(), t.ids.end());
    return out;
  }
  std::string text() const {
    std::string out;
    for (const auto& t : tokens) out += t.text;
    return out + finish.text;
  }
};

Generated generate(uint16_t port, const nlohmann::json& body) {
  Generated g;
  const auto sent = g.sent = Clock::now();
  SseStream s(port, "POST", "/internal/generate", body.dump());
  g.status = s.status();
  std::vector<http::SseEvent> events;
  while (s.next(events)) {
    for (const auto& e : events) {
      if (e.type == "tokens") {
        InternalTokens t;
        EXPECT_FALSE(parse_internal_tokens(e.data, t)) << e.data;
        g.tokens.push_back(t);
        g.token_at.push_back(Clock::now() - sent);
      } else if (e.type == "finish") {
        EXPECT_FALSE(parse_internal_finish(e.data, g.finish)) << e.data;
        g.finished = true;
      } else {
        g.error = e.data;
      }
    }
  }
  return g;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

TEST(Simworker, ReadyHasTheWorkersShapeAndTheModelsFingerprint) {
  WorkerProcess w = start_sim({"--max-num-seqs", "5", "--block-size", "16", "--served-model-name", "tiny"});
  ASSERT_NE(w.port(), 0);
  const auto r = testing::http_request(w.port(), "GET", "/ready");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.json();
  EXPECT_EQ(j["ready"], true);
  EXPECT_EQ(j["boot_id"], "sim-test");
  EXPECT_EQ(j["pid"].get<int64_t>(), w.pid());
  EXPECT_EQ(j["block_size"], 16);
  EXPECT_EQ(j["max_num_seqs"], 5);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["kv_blocks_total"], 16);
  EXPECT_EQ(j["max_model_len"], 16 * 16);  // the cache holds less than the model's context
  EXPECT_EQ(j["model_fingerprint"].get<uint64_t>(), policy::model_fingerprint(model_identity_description(model_path())));
  EXPECT_EQ(testing::http_request(w.port(), "GET", "/health").status, 200);
  EXPECT_EQ(testing::http_request(w.port(), "GET", "/v1/models").json()["data"][0]["id"], "tiny");
  const auto metrics = testing::http_request(w.port(), "GET", "/metrics");
  for (const char* name : {"switchyard_worker_requests_running", "switchyard_worker_kv_blocks_capacity 16",
                           "switchyard_worker_ready 1", "switchyard_worker_time_to_first_token_seconds_bucket"})
    EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
  EXPECT_EQ(w.terminate(), 0);
}

TEST(Simworker, StreamsWordsDeterministicallyAndResumesExactly) {
  WorkerProcess w = start_sim({"--ttft-ms", "1", "--itl-ms", "1"});
  const auto prompt = prompt_of(20, 1000);
  const Generated full = generate(w.port(), generate_body("a", prompt, 12, 7));
  ASSERT_EQ(full.status, 200);
  ASSERT_TRUE(full.finished) << full.error;
  EXPECT_EQ(full.finish.finish_reason, "length");
  EXPECT_EQ(full.finish.usage.prompt_tokens, 20);
  EXPECT_EQ(full.finish.usage.completion_tokens, 12);
  const std::vector<int32_t> ids = full.ids();
  ASSERT_EQ(ids.size(), 12u);
  for (size_t i = 0; i < full.tokens.size(); ++i) EXPECT_EQ(full.tokens[i].index, static_cast<int32_t>(i));

  // The text is what the model's tokenizer makes of the ids: words.
  auto src = ModelSource::open(model_path());
  const auto tok = Tokenizer::from_model(*src);
  EXPECT_EQ(full.text(), tok->decode(full.ids()));
  EXPECT_EQ(full.text().front(), ' ');
  EXPECT_GT(std::set<int32_t>(ids.begin(), ids.end()).size(), 6u);

  // Same seed, same tokens; another seed, others.
  EXPECT_EQ(generate(w.port(), generate_body("b", prompt, 12, 7)).ids(), full.ids());
  EXPECT_NE(generate(w.port(), generate_body("c", prompt, 12, 8)).ids(), full.ids());

  // Resuming after 5 ids continues at index 5 with the rest of the same stream.
  const std::vector<int32_t> head(ids.begin(), ids.begin() + 5);
  const Generated rest = generate(w.port(), generate_body("d", prompt, 12, 7, head));
  ASSERT_TRUE(rest.finished) << rest.error;
  ASSERT_FALSE(rest.tokens.empty());
  EXPECT_EQ(rest.tokens[0].index, 5);
  EXPECT_EQ(rest.ids(), std::vector<int32_t>(ids.begin() + 5, ids.end()));
  EXPECT_EQ(rest.finish.usage.completion_tokens, 12);
  EXPECT_EQ(tok->decode(head) + rest.text(), full.text());

  // A stop token id ends the stream: counted, not sent.
  const int32_t third = ids[2];
  auto body = generate_body("e", prompt, 12, 7);
  body["stop_token_ids"] = {third};
  const Generated stopped = generate(w.port(), body);
  EXPECT_EQ(stopped.finish.finish_reason, "stop");
  EXPECT_EQ(stopped.ids(), std::vector<int32_t>(ids.begin(), ids.begin() + 2));
  EXPECT_EQ(stopped.finish.usage.completion_tokens, 3);
}

TEST(Simworker, TakesAtLeastTheTimeItIsToldAndCachesThePrefix) {
  WorkerProcess w = start_sim({"--ttft-ms", "50", "--prefill-us-per-token", "2000", "--itl-ms", "20"});
  const auto prompt = prompt_of(100, 2000);  // 6 full blocks can be cached: (100 − 1) / 16
  const Generated cold = generate(w.port(), generate_body("cold", prompt, 5, 1));
  ASSERT_TRUE(cold.finished) << cold.error;
  EXPECT_EQ(cold.finish.usage.cached_tokens, 0);
  EXPECT_GE(ms(cold.token_at[0]), 50 + 100 * 2.0);  // TTFT: fixed part + 100 uncached tokens
  // The fifth token: the fixed part, the prefill and four inter-token delays, measured
  // from the request (a gap between two received tokens shrinks when the client reads
  // the first one late, as on a loaded CI machine: 75.8 ms for 80 once).
  EXPECT_GE(ms(cold.token_at[4]), 50 + 100 * 2.0 + 4 * 20.0);

  const Generated warm = generate(w.port(), generate_body("warm", prompt, 5, 1));
  ASSERT_TRUE(warm.finished) << warm.error;
  EXPECT_EQ(warm.finish.usage.cached_tokens, 96);
  EXPECT_GE(ms(warm.token_at[0]), 50 + 4 * 2.0);
  // Nothing bounds it from above in a test; only that the cache saved most of the prefill.
  EXPECT_LT(ms(warm.token_at[0]), ms(cold.token_at[0]));
}

// Sends a 100-token prompt to each port at once (300 ms of prefill each at 3 ms a token,
// 10 ms fixed) and checks that one prefill waited for the other: the later first token
// comes after both, counted from the earlier send (the two sends are apart by the
// thread's start), and neither comes before its own prefill.
void expect_prefills_in_turn(uint16_t port_a, uint16_t port_b) {
  Generated a, b;
  std::thread other([&] { b = generate(port_b, generate_body("b", prompt_of(100, 3000), 2, 2)); });
  a = generate(port_a, generate_body("a", prompt_of(100, 2000), 2, 1));
  other.join();
  ASSERT_TRUE(a.finished) << a.error;
  ASSERT_TRUE(b.finished) << b.error;
  const auto first_sent = std::min(a.sent, b.sent);
  EXPECT_GE(ms(std::max(a.sent + a.token_at[0], b.sent + b.token_at[0]) - first_sent), 10 + 2 * 300.0);
  EXPECT_GE(std::min(ms(a.token_at[0]), ms(b.token_at[0])), 10 + 300.0);
}

const std::vector<std::string> kSlowPrefill = {"--ttft-ms", "10", "--prefill-us-per-token", "3000", "--itl-ms", "1"};

// The uuid label of the worker's switchyard_gpu_info line on /metrics; empty without one.
std::string reported_gpu_uuid(uint16_t port) {
  const std::string body = testing::http_request(port, "GET", "/metrics").body;
  const size_t info = body.find("\nswitchyard_gpu_info{");
  if (info == std::string::npos) return "";
  const size_t at = body.find("uuid=\"", info), end = body.find('"', at + 6);
  return at == std::string::npos || end == std::string::npos ? "" : body.substr(at + 6, end - at - 6);
}

// --serial-prefill: prefills run one after another, as on one GPU, so of two prompts sent
// together one waits for the other's prefill; without it each prefill runs alone.
TEST(Simworker, SerialPrefillQueuesOnePromptBehindTheOther) {
  std::vector<std::string> args = kSlowPrefill;
  args.push_back("--serial-prefill");
  WorkerProcess w = start_sim(args);
  expect_prefills_in_turn(w.port(), w.port());
  EXPECT_EQ(reported_gpu_uuid(w.port()), "") << "a queue of its own is no shared GPU";
}

// Two simulated workers given one FILE by `flag` (--shared-prefill, --sliced-prefill):
// replicas on one simulated GPU, the file removed before and after.
// `timing`: their timing flags.
struct TwoOnOneGpu {
  explicit TwoOnOneGpu(const std::string& flag, std::vector<std::string> timing = kSlowPrefill)
      : timing(std::move(timing)),
        file(fresh(::testing::TempDir() + "sy-" + flag.substr(2) + "-" + std::to_string(::getpid()))),
        w1(start_sim(args(flag))),
        w2(start_sim(args(flag))) {}
  ~TwoOnOneGpu() { std::remove(file.c_str()); }
  static std::string fresh(const std::string& path) {
    std::remove(path.c_str());
    return path;
  }
  std::vector<std::string> args(const std::string& flag) const {
    std::vector<std::string> a = timing;
    a.insert(a.end(), {flag, file});
    return a;
  }
  // Both report that GPU by one uuid, as two workers on a real one do.
  void expect_one_gpu_reported() {
    const std::string uuid = reported_gpu_uuid(w1.port());
    EXPECT_TRUE(uuid.starts_with("GPU-sim-")) << uuid;
    EXPECT_EQ(reported_gpu_uuid(w2.port()), uuid);
  }

  const std::vector<std::string> timing;
  const std::string file;
  WorkerProcess w1, w2;
};

// Two simulated workers given one --shared-prefill file are replicas on one GPU: a
// prompt sent to each at once is prefilled one after the other, across the processes,
// and both report that GPU.
TEST(Simworker, SharedPrefillQueuesAcrossProcesses) {
  TwoOnOneGpu gpu("--shared-prefill");
  expect_prefills_in_turn(gpu.w1.port(), gpu.w2.port());
  gpu.expect_one_gpu_reported();
}

// Processor sharing: of 100 ms and 10 ms queued at once, each runs at half speed until
// the 10 finishes (20 ms in), then the rest of the 100 alone (110 ms in all).
TEST(SlicedPrefill, ProcessorSharingArithmetic) {
  std::vector<double> r = {100, 10};
  EXPECT_DOUBLE_EQ(sim::sliced_finish_ms(r, 1), 20);
  EXPECT_DOUBLE_EQ(sim::sliced_finish_ms(r, 0), 110);
  sim::share_elapsed(r, 10);
  EXPECT_EQ(r, (std::vector<double>{95, 5}));
  sim::share_elapsed(r, 10);
  EXPECT_EQ(r, (std::vector<double>{90, 0}));
  sim::share_elapsed(r, 30);
  EXPECT_EQ(r, (std::vector<double>{60, 0}));
  sim::share_elapsed(r, 1000);
  EXPECT_EQ(r, (std::vector<double>{0, 0}));
  // One process queuing twice: the second waits for the first (its own work is one
  // queue), the first not for the second.
  const std::string file = ::testing::TempDir() + "sy-sliced-unit-" + std::to_string(::getpid());
  std::remove(file.c_str());
  sim::SharedTimeline t(file, sim::SharedTimeline::Sharing::kSliced);
  const auto first = t.queue(1000);
  EXPECT_NEAR(first.done_in_ms, 1000, 1);
  EXPECT_NEAR(t.queue(500).done_in_ms, 1500, 50);
  EXPECT_NEAR(t.left_ms(first), 1000, 50);
  std::remove(file.c_str());
}

// Two simulated workers given one --sliced-prefill file share a GPU time-sliced: a short
// prompt sent to one while the other works through a long prefill (200 tokens, 600 ms)
// gets its first token after twice its own prefill (60 ms), not after the long one, as
// it would behind one --shared-prefill queue; the long one, queued first, is slowed by
// as much (its worker learns it when its first estimate comes).
TEST(Simworker, SlicedPrefillServesAShortPromptBesideALongOne) {
  TwoOnOneGpu gpu("--sliced-prefill");
  Generated longer, shorter;
  std::thread other([&] { longer = generate(gpu.w1.port(), generate_body("long", prompt_of(200, 2000), 2, 1)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  shorter = generate(gpu.w2.port(), generate_body("short", prompt_of(20, 3000), 2, 2));
  other.join();
  ASSERT_TRUE(longer.finished) << longer.status << " " << longer.error;
  ASSERT_TRUE(shorter.finished) << shorter.error;
  EXPECT_GE(ms(shorter.token_at[0]), 10 + 2 * 60.0 - 5);
  EXPECT_LT(ms(shorter.token_at[0]), 400) << "served beside the long prefill, not behind it";
  EXPECT_GE(ms(longer.token_at[0]), 10 + 600 + 60.0 - 5);
  gpu.expect_one_gpu_reported();
}

// --sliced-decode: two simulated workers decoding on one GPU take turns, as CUDA
// time-slices processes: while one decodes a long reply, the other's tokens come twice
// --itl-ms apart (alone, once). Lower bounds only.
TEST(Simworker, SlicedDecodeSlowsEachTokenByTheWorkersDecoding) {
  TwoOnOneGpu gpu("--sliced-prefill", {"--ttft-ms", "10", "--prefill-us-per-token", "100", "--itl-ms", "20", "--sliced-decode"});
  Generated longer, shorter;
  std::thread other([&] { longer = generate(gpu.w1.port(), generate_body("long", prompt_of(20, 2000), 60, 1)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  shorter = generate(gpu.w2.port(), generate_body("short", prompt_of(20, 3000), 10, 2));
  other.join();
  ASSERT_TRUE(longer.finished) << longer.error;
  ASSERT_TRUE(shorter.finished) << shorter.error;
  ASSERT_EQ(shorter.token_at.size(), 10u);
  // Nine gaps of 2 × 20 ms (the long reply, 60 tokens of at least 20 ms, is still going).
  EXPECT_GE(ms(shorter.token_at[9] - shorter.token_at[0]), 9 * 40.0 * 0.95);
}

// The processes decoding, as the file counts them: this one while it has requests
// decoding, another (a child) until it stops or exits.
TEST(SlicedDecode, TheFileCountsLiveProcessesWithRequestsDecoding) {
  const std::string file = ::testing::TempDir() + "sy-sliced-decode-" + std::to_string(::getpid());
  std::remove(file.c_str());
  sim::SharedTimeline t(file, sim::SharedTimeline::Sharing::kSliced);
  EXPECT_EQ(t.decoders(), 0);
  t.set_decoding(3);
  EXPECT_EQ(t.decoders(), 1);
  int ready[2], quit[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(quit), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // decodes until told to quit, then exits without saying so
    sim::SharedTimeline mine(file, sim::SharedTimeline::Sharing::kSliced);
    mine.set_decoding(1);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1 || ::read(quit[0], &c, 1) != 1) ::_exit(1);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(t.decoders(), 2);
  t.set_decoding(0);
  EXPECT_EQ(t.decoders(), 1);
  ASSERT_EQ(::write(quit[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(t.decoders(), 0) << "an exited process still counted";
  for (int fd : {ready[0], ready[1], quit[0], quit[1]}) ::close(fd);
  std::remove(file.c_str());
}

TEST(Simworker, KvEventsSnapshotThenStoredAndRemovedHashes) {
  WorkerProcess w = start_sim({"--ttft-ms", "1", "--itl-ms", "1"});
  const uint64_t fp = testing::http_request(w.port(), "GET", "/ready").json()["model_fingerprint"].get<uint64_t>();
  SseStream events(w.port(), "GET", "/internal/kv-events");
  ASSERT_EQ(events.status(), 200);
  std::vector<http::SseEvent> got;
  ASSERT_TRUE(events.next(got));
  KvEventWire snap;
  ASSERT_FALSE(parse_kv_event(got[0].data, snap));
  EXPECT_TRUE(snap.stored);
  EXPECT_TRUE(snap.hashes.empty());

  // Three prompts of 100 tokens, each reserving 7 of the 16 blocks: the third evicts.
  std::set<uint64_t> cached;
  std::set<uint64_t> removed;
  uint64_t last_seq = snap.seq;
  std::vector<std::vector<uint64_t>> expected;
  for (int i = 0; i < 3; ++i) {
    const auto prompt = prompt_of(100, 3000 + 500 * i);
    ASSERT_TRUE(generate(w.port(), generate_body("p" + std::to_string(i), prompt, 5, 1)).finished);
    expected.push_back(policy::prefix_block_hashes(fp, prompt, 16));  // 6 full blocks
    // Read until every full prompt block of this request is stored.
    auto all_stored = [&] {
      for (uint64_t h : expected.back())
        if (!cached.count(h)) return false;
      return true;
    };
    while (!all_stored()) {
      ASSERT_TRUE(events.next(got)) << "stream ended";
      for (const auto& e : got) {
        KvEventWire ev;
        ASSERT_FALSE(parse_kv_event(e.data, ev)) << e.data;
        EXPECT_EQ(ev.seq, last_seq + 1);
        last_seq = ev.seq;
        for (uint64_t h : ev.hashes) {
          if (ev.stored) {
            cached.insert(h);
          } else {
            EXPECT_EQ(cached.erase(h), 1u) << "removed a hash never stored";
            removed.insert(h);
          }
        }
      }
    }
  }
  EXPECT_FALSE(removed.empty()) << "16 blocks cannot hold three 7-block requests";
  EXPECT_LE(cached.size(), 16u);
  // The oldest prompt lost blocks; the newest is whole.
  size_t first_left = 0;
  for (uint64_t h : expected[0]) first_left += cached.count(h);
  EXPECT_LT(first_left, expected[0].size());
}

// The KV host tier: of three 100-token prompts on 16 blocks (7 each reserved) the third
// evicts the first's last 3 cached blocks; with a tier they are kept there, and the
// first prompt's repeat finds all 6 full blocks cached, its first token waiting for the
// 3 loaded (48 tokens at 5 ms each); without one it finds 3.
TEST(Simworker, HostTierServesEvictedBlocksAndChargesTheirLoad) {
  auto repeat_first = [](std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--ttft-ms", "1", "--itl-ms", "1", "--prefill-us-per-token", "0"});
    WorkerProcess w = start_sim(extra);
    for (int i : {0, 1, 2})
      EXPECT_TRUE(generate(w.port(), generate_body("p" + std::to_string(i), prompt_of(100, 3000 + 500 * i), 5, 1)).finished);
    const Generated again = generate(w.port(), generate_body("again", prompt_of(100, 3000), 5, 1));
    EXPECT_TRUE(again.finished) << again.error;
    return std::pair(again, testing::http_request(w.port(), "GET", "/metrics").body);
  };
  const auto [with, metrics] = repeat_first({"--kv-host-blocks", "32", "--host-load-us-per-token", "5000"});
  const Generated without = repeat_first({}).first;
  EXPECT_EQ(with.finish.usage.cached_tokens, 96);
  EXPECT_EQ(without.finish.usage.cached_tokens, 48) << "p2 evicted p0's last 3 of 6 full blocks";
  EXPECT_NE(metrics.find("switchyard_worker_kv_host_blocks_loaded_total 3"), std::string::npos) << metrics;
  EXPECT_GE(ms(with.token_at[0]), 3 * 16 * 5.0) << "the first repeat's loads are charged";
}

TEST(Simworker, ClientThatLeavesCancelsAndBadRequestsAreRefused) {
  WorkerProcess w = start_sim({"--ttft-ms", "1", "--itl-ms", "20", "--max-num-seqs", "1"});
  {
    SseStream s(w.port(), "POST", "/internal/generate", generate_body("long", prompt_of(10, 100), 200, 1).dump());
    std::vector<http::SseEvent> got;
    ASSERT_TRUE(s.next(got));
    // A duplicate id while it runs.
    EXPECT_EQ(testing::post_json(w.port(), "/internal/generate", generate_body("long", {1, 2}, 2, 1)).status, 409);
    s.close();
  }
  // The seat it held is free again: with max-num-seqs 1 this request must run.
  const Generated next = generate(w.port(), generate_body("next", prompt_of(10, 100), 3, 1));
  EXPECT_TRUE(next.finished) << next.error;
  const auto metrics = testing::http_request(w.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("switchyard_worker_requests_aborted_total 1"), std::string::npos) << metrics;

  EXPECT_EQ(testing::post_json(w.port(), "/internal/generate", {{"request_id", "x"}}).status, 400);
  const auto too_long = testing::post_json(w.port(), "/internal/generate", generate_body("y", prompt_of(250, 1), 10, 1));
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(too_long.json()["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(testing::post_json(w.port(), "/internal/generate", generate_body("z", {999999999}, 2, 1)).status, 400);
  const auto no_prompt = testing::http_request(w.port(), "POST", "/v1/completions", "{}");
  EXPECT_EQ(no_prompt.status, 400);
  EXPECT_EQ(no_prompt.json()["error"]["param"], "prompt");
  EXPECT_EQ(w.terminate(), 0);
}

TEST(Simworker, RefusesBadFlags) {
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--itl-ms", "-1"}, {"--jitter", "2"}, {"--kv-memory-gb", "1"}, {"--no-such-flag", "1"},
        {"--kv-host-blocks", "-1"}, {"--kv-host-gb", "1", "--kv-host-blocks", "8"},
        {"--kv-host-gb", "1", "--no-prefix-caching"}, {"--host-load-us-per-token", "-2"}, {"--sliced-decode"}}) {
    WorkerProcess w = start_sim(bad);  // with --kv-blocks already given
    EXPECT_EQ(w.port(), 0) << bad[0];
    EXPECT_EQ(w.terminate(), 2) << bad[0];
  }
}

}  // namespace
}  // namespace sy
