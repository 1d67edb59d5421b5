// switchyard-worker serve: loads the model, starts the engine and the HTTP API, prints
// the URL it listens on (one line on stdout, once bound: with --port 0 the OS picks the
// port and this line is how a supervisor or a test learns it), and runs until SIGTERM or
// SIGINT. Shutdown: stop accepting, end event streams, stop the engine (requests in
// flight end with an error event), let connections drain for a few seconds, close the
// rest.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <thread>

#include "common/chat_template.h"
#include "common/error.h"
#include "common/http/server.h"
#include "common/model_identity.h"
#include "common/model_source.h"
#include "common/tokenizer/tokenizer.h"
#include "policy/block_hash.h"
#include "worker/backend/backend.h"
#include "common/cli/args.h"
#include "worker/cli/commands.h"
#include "worker/engine/engine.h"
#include "worker/model/model_config.h"
#include "worker/server/worker_server.h"

namespace sy::cli {
namespace {

namespace net = boost::asio;
constexpr std::chrono::seconds kDrainTime{5};

std::string default_model_name(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // "dir/"
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

template <class Pred>
void wait_until(Pred done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  Args a(argv,
         {"model", "host", "port", "boot-id", "max-num-seqs", "kv-blocks", "kv-memory-gb",
          "prefill-chunk", "block-size", "served-model-name", "device", "http-threads"},
         {"no-prefix-caching"});
  if (a.has("kv-blocks") && a.has("kv-memory-gb"))
    throw UsageError("give at most one of --kv-blocks and --kv-memory-gb");
  const int64_t port = a.get_int("port", 8000);
  if (port < 0 || port > 65535) throw UsageError("--port must be in 0..65535");
  const int64_t max_num_seqs = a.get_int("max-num-seqs", 16);
  if (max_num_seqs < 1 || max_num_seqs > 4096)
    throw UsageError("--max-num-seqs must be in 1..4096");
  const int64_t prefill_chunk = a.get_int("prefill-chunk", 256);
  if (prefill_chunk < 1 || prefill_chunk > 1'000'000)
    throw UsageError("--prefill-chunk must be in 1..1000000");
  const int64_t http_threads = a.get_int("http-threads", 2);
  if (http_threads < 1 || http_threads > 256) throw UsageError("--http-threads must be in 1..256");
  BackendOptions bo;
  bo.block_size = static_cast<int32_t>(a.get_int("block-size", 16));
  if (bo.block_size <= 0 || bo.block_size > 1024)
    throw UsageError("--block-size must be in 1..1024");
  if (a.has("kv-blocks")) {
    const int64_t n = a.get_int("kv-blocks", 0);
    if (n <= 0 || n > INT32_MAX) throw UsageError("--kv-blocks must be positive");
    bo.num_kv_blocks = static_cast<int32_t>(n);
  } else if (a.has("kv-memory-gb")) {
    const double gb = a.get_double("kv-memory-gb", 2.0);
    if (!(gb > 0) || gb > 1e6) throw UsageError("--kv-memory-gb must be positive");
    bo.kv_memory_bytes = static_cast<size_t>(gb * double(1 << 30));
  }
  // --device cuda[:N]: decode graphs for every batch the scheduler can form, step buffers
  // for one prefill chunk plus the decodes, and without a KV flag 90% of the device
  // memory left after the weights for the KV cache.
  bo.max_num_seqs = static_cast<int32_t>(max_num_seqs);
  bo.max_step_tokens = static_cast<int32_t>(prefill_chunk + max_num_seqs);
  if (!a.has("kv-blocks") && !a.has("kv-memory-gb")) bo.kv_free_memory_fraction = 0.9;
  const std::string model_path = a.get("model");
  const std::string host = a.get_or("host", "127.0.0.1");

  // The model, its tokenizer and chat template, the backend and the engine.
  auto src = ModelSource::open(model_path);
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  std::shared_ptr<const ChatTemplate> tmpl;
  try {
    tmpl = std::make_shared<ChatTemplate>(
        ChatTemplate::from_model(*src, tok->bos_token(), tok->eos_token()));
  } catch (const ModelFileError& e) {
    std::fprintf(stderr, "warning: %s; /v1/chat/completions will refuse requests\n", e.what());
  }
  const ModelConfig config = ModelConfig::from_source(*src);
  EngineOptions eo;
  eo.max_num_seqs = static_cast<int32_t>(max_num_seqs);
  eo.prefill_chunk = static_cast<int32_t>(prefill_chunk);
  eo.prefix_caching = !a.has("no-prefix-caching");
  eo.model_fingerprint = policy::model_fingerprint(model_identity_description(model_path));
  Engine engine(create_backend(a.get_or("device", "cpu"), *src, config, bo), tok, eo);
  std::fprintf(stderr, "model %s: %s; %d KV blocks of %d tokens; fingerprint %016llx\n",
               model_path.c_str(), config.describe().c_str(), engine.num_kv_blocks(),
               engine.block_size(), static_cast<unsigned long long>(eo.model_fingerprint));

  WorkerServerOptions wo;
  wo.boot_id = a.get_or("boot-id", "");
  wo.model_names = {a.get_or("served-model-name", default_model_name(model_path))};
  wo.model_fingerprint = eo.model_fingerprint;
  WorkerServer api(engine, tmpl, wo);

  net::io_context ioc;
  http::ServerOptions so;
  so.host = host;
  so.port = static_cast<uint16_t>(port);
  so.log = [](const std::string& m) { std::fprintf(stderr, "http: %s\n", m.c_str()); };
  http::HttpServer server(ioc, so, api.router());
  if (std::string err = server.start(); !err.empty()) throw std::runtime_error(err);
  engine.start();  // /ready turns 200 after its warm-up step

  std::promise<int> stop_signal;
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (!ec) stop_signal.set_value(sig);
  });
  auto guard = net::make_work_guard(ioc);
  std::atomic<int> running{static_cast<int>(http_threads)};
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < http_threads; ++i)
    threads.emplace_back([&] {
      ioc.run();
      --running;
    });

  const bool v6 = host.find(':') != std::string::npos;
  std::printf("switchyard-worker listening on http://%s%s%s:%u\n", v6 ? "[" : "", host.c_str(),
              v6 ? "]" : "", server.port());
  std::fflush(stdout);

  const int sig = stop_signal.get_future().get();
  std::fprintf(stderr, "signal %d: shutting down\n", sig);
  server.stop();
  api.shutdown();
  engine.stop();  // requests in flight finish with an abort, reported to their clients
  wait_until([&] { return server.connections() == 0; }, kDrainTime);
  server.close_all();
  signals.cancel();
  guard.reset();
  wait_until([&] { return running.load() == 0; }, std::chrono::seconds(2));
  ioc.stop();
  for (auto& t : threads) t.join();
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace sy::cli
