// switchyard-simworker: a drop-in replacement for `switchyard-worker serve` with no
// model behind it, for gateway scale tests. It takes the flags the gateway's supervisor
// passes to a worker, reads only the tokenizer and metadata of --model (no weights),
// prints the same listening line, and speaks the worker's protocol with configurable
// timing and a real prefix cache. See bench/README.md.
#include <boost/asio/io_context.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>

#include "bench/simworker/sim_engine.h"
#include "bench/simworker/sim_server.h"
#include "bench/simworker/token_source.h"
#include "common/chat_template.h"
#include "common/cli/serve_flags.h"
#include "common/http/serve_loop.h"
#include "common/http/server_limits.h"
#include "common/model_identity.h"
#include "common/model_limits.h"
#include "common/model_source.h"
#include "common/telemetry/gpu_metrics.h"
#include "common/tokenizer/tokenizer.h"
#include "policy/block_hash.h"

namespace {

const char kUsage[] =
    "usage: switchyard-simworker serve --model M [--host 127.0.0.1] [--port 8000] [--boot-id ID]\n"
    "    [--max-num-seqs 16] [--kv-blocks N | --kv-memory-gb X] [--kv-host-blocks N | --kv-host-gb X]\n"
    "    [--host-load-us-per-token 2.5] [--prefill-chunk 256]\n"
    "    [--block-size 16] [--served-model-name NAME] [--http-threads 1] [--no-prefix-caching]\n"
    "    [--device D] [--ttft-ms 10] [--prefill-us-per-token 100] [--itl-ms 10] [--jitter 0]\n"
    "    [--serial-prefill] [--shared-prefill FILE | --sliced-prefill FILE [--sliced-decode]]\n"
    "    [--ready-delay-ms 0]\n"
    "    [--gpu-bus-ids A,B --nvml PATH]\n"
    "M is a GGUF file or Hugging Face directory: only its tokenizer and metadata are read.\n"
    "Without --kv-blocks the cache holds 8192 blocks (--kv-memory-gb is accepted, not used).\n"
    "--kv-host-blocks: a KV host tier of N blocks (evicted prefix blocks kept, a hit copied\n"
    "back at --host-load-us-per-token per token before the prefill); --kv-host-gb X: X GiB\n"
    "at 2 MiB a block (llama3-8b's 16 tokens in bf16, the model the default timing of\n"
    "bench/agentic_bench.sh stands for).\n"
    "--serial-prefill: prefills run one after another; --shared-prefill FILE: one after\n"
    "another across every simworker given FILE (replicas sharing one simulated GPU, which\n"
    "each reports as switchyard_gpu_info with a uuid made from FILE, so that the gateway\n"
    "sees them share it). --sliced-prefill FILE: the same GPU time-sliced instead: each\n"
    "simworker's prefills one after another, every simworker with prefill pending at an\n"
    "equal share of the GPU's speed (as CUDA shares a GPU between processes).\n"
    "--sliced-decode (with --sliced-prefill): decode time-sliced too: each token takes\n"
    "--itl-ms times the number of simworkers on FILE with a request decoding.\n"
    "--gpu-bus-ids: report these GPUs' switchyard_gpu_* series on /metrics, read through the\n"
    "NVML library at --nvml (default libnvidia-ml.so.1; tests pass a test double).\n";

constexpr int32_t kDefaultKvBlocks = 8192;
constexpr double kHostBlocksPerGb = 512;  // 2 MiB blocks

double non_negative(const sy::cli::Args& a, const char* name, double fallback, double max) {
  const double v = a.get_double(name, fallback);
  if (!(v >= 0) || v > max)
    throw sy::cli::UsageError("--" + std::string(name) + " must be in 0.." + std::to_string(static_cast<int64_t>(max)));
  return v;
}

// --kv-host-blocks N or --kv-host-gb X (as blocks); 0 without either.
int32_t host_blocks(const sy::cli::Args& a) {
  if (a.has("kv-host-blocks") && a.has("kv-host-gb"))
    throw sy::cli::UsageError("--kv-host-blocks and --kv-host-gb exclude each other");
  const double n = a.has("kv-host-gb") ? non_negative(a, "kv-host-gb", 0, 1e6) * kHostBlocksPerGb
                                       : non_negative(a, "kv-host-blocks", 0, 1e9);
  if (n > 0 && a.has("no-prefix-caching"))
    throw sy::cli::UsageError("the KV host tier keeps prefix blocks: not with --no-prefix-caching");
  return static_cast<int32_t>(n);
}

int run(const std::vector<std::string>& argv) {
  using namespace sy;
  std::set<std::string> valued = cli::serve_flag_names();
  valued.insert({"device", "ttft-ms", "prefill-us-per-token", "itl-ms", "jitter", "ready-delay-ms", "gpu-bus-ids", "nvml",
                 "shared-prefill", "sliced-prefill", "kv-host-blocks", "kv-host-gb", "host-load-us-per-token"});
  const cli::Args a(argv, valued, {"no-prefix-caching", "serial-prefill", "sliced-decode"});
  const cli::ServeFlags f = cli::read_serve_flags(a);
  sim::SimTiming timing;
  timing.ttft_ms = non_negative(a, "ttft-ms", timing.ttft_ms, 3.6e6);
  timing.prefill_us_per_token = non_negative(a, "prefill-us-per-token", timing.prefill_us_per_token, 1e6);
  timing.host_load_us_per_token = non_negative(a, "host-load-us-per-token", timing.host_load_us_per_token, 1e6);
  timing.itl_ms = non_negative(a, "itl-ms", timing.itl_ms, 3.6e6);
  timing.jitter = non_negative(a, "jitter", timing.jitter, 1);
  if (a.has("shared-prefill") && a.has("sliced-prefill")) throw cli::UsageError("--shared-prefill and --sliced-prefill exclude each other");
  if (a.has("sliced-decode") && !a.has("sliced-prefill")) throw cli::UsageError("--sliced-decode needs --sliced-prefill FILE (the GPU it slices)");
  timing.serial_prefill = a.has("serial-prefill") || a.has("shared-prefill") || a.has("sliced-prefill");
  const double ready_delay_ms = non_negative(a, "ready-delay-ms", 0, 3.6e6);

  // The tokenizer and limits only: no weights are read.
  auto src = ModelSource::open(f.model);
  const std::unique_ptr<const Tokenizer> tok = Tokenizer::from_model(*src);
  const sim::TokenSource tokens(*tok);
  sim::SimEngineOptions eo;
  eo.max_num_seqs = f.max_num_seqs;
  eo.block_size = f.block_size;
  eo.kv_blocks = f.kv_blocks.value_or(kDefaultKvBlocks);
  eo.prefix_caching = !a.has("no-prefix-caching");
  eo.kv_host_blocks = host_blocks(a);
  eo.model_fingerprint = policy::model_fingerprint(model_identity_description(f.model));
  eo.sliced_prefill = a.has("sliced-prefill");
  eo.sliced_decode = a.has("sliced-decode");
  eo.shared_prefill_path = a.get_or(eo.sliced_prefill ? "sliced-prefill" : "shared-prefill", "");
  sim::SimEngine engine(eo);

  sim::SimServerOptions so;
  so.boot_id = f.boot_id;
  so.model_name = f.served_model_name;
  so.model_fingerprint = eo.model_fingerprint;
  so.limits = read_model_limits(*src);
  so.limits.context_length = static_cast<int32_t>(
      std::min<int64_t>(so.limits.context_length, int64_t{eo.kv_blocks} * eo.block_size));
  so.ready_delay = std::chrono::milliseconds(static_cast<int64_t>(std::llround(ready_delay_ms)));
  sim::SimServer api(engine, *tok, chat_template_or_null(*src, tok->bos_token(), tok->eos_token()), tokens, timing, so);
  // Simulated GPUs: the series of real ones (named by bus id), so that the gateway's
  // telemetry and power rules are tested against workers that report GPUs.
  if (a.has("gpu-bus-ids")) {
    std::vector<GpuDevice> gpus;
    std::string list = a.get_or("gpu-bus-ids", "");
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) gpus.push_back({static_cast<int>(gpus.size()), list.substr(at, comma - at)});
      at = comma + 1;
    }
    std::fprintf(stderr, "%s\n", start_gpu_metrics(api.metrics(), gpus, a.get_or("nvml", NvmlLibrary::kDefaultPath)).c_str());
  } else if (!eo.shared_prefill_path.empty()) {
    // The simulated GPU the shared queue stands for, reported as a real one is.
    const auto id = std::hash<std::string>{}(std::filesystem::absolute(eo.shared_prefill_path).lexically_normal().string());
    char uuid[40];
    std::snprintf(uuid, sizeof uuid, "GPU-sim-%016llx", static_cast<unsigned long long>(id));
    register_gpu_info(api.metrics(), {.ordinal = 0, .pci_bus_id = "", .uuid = uuid, .name = "simulated (shared prefill queue)"});
  }
  std::fprintf(stderr, "simulated %s: %zu word tokens; %d KV blocks of %d tokens, %d in the host tier; fingerprint %016llx\n",
               f.model.c_str(), tokens.size(), eo.kv_blocks, eo.block_size, eo.kv_host_blocks,
               static_cast<unsigned long long>(eo.model_fingerprint));

  boost::asio::io_context ioc;
  http::ServerOptions ho;
  ho.host = f.host;
  ho.port = f.port;
  ho.log = [](const std::string& m) { std::fprintf(stderr, "http: %s\n", m.c_str()); };
  http::apply_limits(f.limits, ho);
  http::HttpServer server(ioc, ho, api.router());
  if (std::string err = server.start(); !err.empty()) throw std::runtime_error(err);
  // One HTTP thread unless told otherwise: a fleet of simulated workers shares few cores.
  const int threads = a.has("http-threads") ? f.http_threads : 1;
  http::serve_until_signal(ioc, server, {"switchyard-simworker", threads, std::chrono::seconds(5)},
                           [&] { api.shutdown(); });
  std::fprintf(stderr, "stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc < 2 || std::strcmp(argv[1], "serve") != 0) {
    std::fprintf(stderr, "error: the first argument must be 'serve'\n\n%s", kUsage);
    return 2;
  }
  try {
    return run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const sy::cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
