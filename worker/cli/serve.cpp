// switchyard-worker serve: loads the model, starts the engine and the HTTP API, prints
// the URL it listens on (one line on stdout, once bound: with --port 0 the OS picks the
// port and this line is how a supervisor or a test learns it), and runs until SIGTERM or
// SIGINT. Shutdown: stop accepting, end event streams, stop the engine (requests in
// flight end with an error event), let connections drain for a few seconds, close the
// rest.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <atomic>
#include <functional>
#include <chrono>
#include <csignal>
#include <cstdio>

#include "common/chat_template.h"
#include "common/error.h"
#include "common/http/serve_loop.h"
#include "common/http/server.h"
#include "common/http/server_limits.h"
#include "common/http/server_metrics.h"
#include "common/model_identity.h"
#include "common/model_source.h"
#include "common/worker_metrics.h"
#include "common/tokenizer/tokenizer.h"
#include "policy/block_hash.h"
#include "worker/backend/backend.h"
#include "common/cli/args.h"
#include "common/cli/serve_flags.h"
#include "worker/cli/commands.h"
#include "worker/engine/engine.h"
#include "worker/model/model_config.h"
#include "worker/server/worker_server.h"
#include "worker/telemetry/worker_gpus.h"

namespace sy::cli {
namespace {

constexpr std::chrono::seconds kDrainTime{5};

}  // namespace

int run_serve(const std::vector<std::string>& argv) {
  std::set<std::string> valued = serve_flag_names();
  valued.insert("device");
  valued.insert("chat-template-kwargs");
  valued.insert("kv-host-gb");
  const Args a(argv, valued, {"no-prefix-caching"});
  const ServeFlags f = read_serve_flags(a);
  BackendOptions bo;
  bo.block_size = f.block_size;
  bo.deterministic = f.deterministic;
  bo.tp = f.tp;
  bo.pcp = f.pcp;
  bo.cpu_kv_f16 = f.kv_f16;
  if (f.kv_blocks) bo.num_kv_blocks = *f.kv_blocks;
  if (f.kv_memory_gb) bo.kv_memory_bytes = static_cast<size_t>(*f.kv_memory_gb * double(1 << 30));
  // --device cuda[:N]: decode graphs for every batch the scheduler can form, step buffers
  // for one prefill chunk plus the decodes, and without a KV flag 90% of the device
  // memory left after the weights for the KV cache.
  bo.max_num_seqs = f.max_num_seqs;
  bo.max_step_tokens = f.prefill_chunk + f.max_num_seqs;
  if (!f.kv_blocks && !f.kv_memory_gb) bo.kv_free_memory_fraction = 0.9;
  if (a.has("kv-host-gb")) {
    const double gb = a.get_double("kv-host-gb", 0);
    if (!(gb >= 0) || gb > 1e6) throw cli::UsageError("--kv-host-gb must be 0 or more");
    if (gb > 0 && a.has("no-prefix-caching")) throw cli::UsageError("--kv-host-gb keeps prefix blocks: not with --no-prefix-caching");
    bo.kv_host_memory_bytes = static_cast<size_t>(gb * double(1 << 30));
    bo.kv_host_in_background = true;  // ready without waiting for it
  }
  const std::string& model_path = f.model;

  // The model, its tokenizer and chat template, the backend and the engine.
  auto src = ModelSource::open(model_path);
  std::shared_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  const std::shared_ptr<const ChatTemplate> tmpl =
      chat_template_or_null(*src, tok->bos_token(), tok->eos_token());
  const ModelConfig config = ModelConfig::from_source(*src);
  EngineOptions eo;
  eo.max_num_seqs = f.max_num_seqs;
  eo.prefill_chunk = f.prefill_chunk;
  eo.prefix_caching = !a.has("no-prefix-caching");
  eo.model_fingerprint = policy::model_fingerprint(model_identity_description(model_path));
  Engine engine(create_backend(a.get_or("device", "cpu"), *src, config, bo), tok, eo);
  std::fprintf(stderr, "model %s: %s; %d KV blocks of %d tokens; fingerprint %016llx\n",
               model_path.c_str(), config.describe().c_str(), engine.num_kv_blocks(),
               engine.block_size(), static_cast<unsigned long long>(eo.model_fingerprint));

  WorkerServerOptions wo;
  wo.boot_id = f.boot_id;
  wo.model_names = {f.served_model_name};
  wo.model_fingerprint = eo.model_fingerprint;
  if (a.has("chat-template-kwargs")) {
    wo.chat_template_kwargs = Json::parse(a.get("chat-template-kwargs"), nullptr, false);
    if (!wo.chat_template_kwargs.is_object())
      throw UsageError("--chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  }
  WorkerServer api(engine, tmpl, wo);
  // switchyard_gpu_* for this worker's GPUs (one per rank), through NVML
  // where the driver has it.
  if (const std::string gpus = start_worker_gpu_metrics(api.metrics(), a.get_or("device", "cpu"), f.tp * f.pcp);
      !gpus.empty())
    std::fprintf(stderr, "%s\n", gpus.c_str());

  boost::asio::io_context ioc;
  http::ServerOptions so;
  so.host = f.host;
  so.port = f.port;
  so.log = [](const std::string& m) { std::fprintf(stderr, "http: %s\n", m.c_str()); };
  http::apply_limits(f.limits, so);
  http::HttpServer server(ioc, so, api.router());
  if (std::string err = server.start(); !err.empty()) throw std::runtime_error(err);
  http::register_server_metrics(api.metrics(), server, "api");
  // A failed device step ends every request with an error and stops the engine; the
  // process then shuts down as on SIGTERM and exits 1, so that the gateway's supervisor
  // restarts it (and continues the streams on other replicas meanwhile).
  engine.set_fatal_handler([](const std::string&) { std::raise(SIGTERM); });
  engine.start();  // /ready turns 200 after its warm-up step

  // Every 10 s that saw work, the worker's speed in its log (also in /metrics).
  auto speed_strand = boost::asio::make_strand(ioc);
  boost::asio::steady_timer speed_timer(speed_strand);
  std::atomic<bool> stopping{false};
  std::function<void()> log_speed = [&] {
    speed_timer.expires_after(std::chrono::seconds(10));
    speed_timer.async_wait([&](boost::system::error_code ec) {
      if (ec || stopping) return;
      const ThroughputMeter::Rates r = sample_throughput(api.throughput(), engine.stats());
      if (r.generated_per_s > 0 || r.prompt_per_s > 0)
        std::fprintf(stderr, "throughput (last %.0f s): %.1f tok/s generated, %.1f tok/s of prompt computed; %lld running, %lld waiting\n",
                     r.span_s, r.generated_per_s, r.prompt_per_s, static_cast<long long>(engine.stats().requests_running.load()),
                     static_cast<long long>(engine.stats().requests_waiting.load()));
      log_speed();
    });
  };
  boost::asio::post(speed_strand, log_speed);

  http::serve_until_signal(ioc, server,
                           {"switchyard-worker", f.http_threads, kDrainTime}, [&] {
                             stopping = true;
                             boost::asio::post(speed_strand, [&] { speed_timer.cancel(); });
                             api.shutdown();
                             // Requests in flight finish with an abort, reported to their clients.
                             engine.stop();
                           });
  if (const std::string failure = engine.failure(); !failure.empty()) {
    std::fprintf(stderr, "stopped after a device failure: %s\n", failure.c_str());
    return 1;
  }
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace sy::cli
