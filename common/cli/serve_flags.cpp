#include "common/cli/serve_flags.h"

#include <climits>

#include "common/model_source.h"

namespace sy::cli {
namespace {

int32_t int_in(const Args& a, const char* name, int64_t fallback, int64_t lo, int64_t hi) {
  const int64_t v = a.get_int(name, fallback);
  if (v < lo || v > hi)
    throw UsageError("--" + std::string(name) + " must be in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  return static_cast<int32_t>(v);
}

}  // namespace

std::set<std::string> serve_flag_names() {
  return {"model",         "host",       "port",        "boot-id",           "max-num-seqs", "kv-blocks",
          "kv-memory-gb",  "prefill-chunk", "block-size", "served-model-name", "http-threads"};
}

ServeFlags read_serve_flags(const Args& a) {
  ServeFlags f;
  if (a.has("kv-blocks") && a.has("kv-memory-gb"))
    throw UsageError("give at most one of --kv-blocks and --kv-memory-gb");
  f.port = static_cast<uint16_t>(int_in(a, "port", 8000, 0, 65535));
  f.max_num_seqs = int_in(a, "max-num-seqs", 16, 1, 4096);
  f.prefill_chunk = int_in(a, "prefill-chunk", 256, 1, 1'000'000);
  f.http_threads = int_in(a, "http-threads", 2, 1, 256);
  f.block_size = int_in(a, "block-size", 16, 1, 1024);
  if (a.has("kv-blocks")) {
    const int64_t n = a.get_int("kv-blocks", 0);
    if (n <= 0 || n > INT32_MAX) throw UsageError("--kv-blocks must be positive");
    f.kv_blocks = static_cast<int32_t>(n);
  }
  if (a.has("kv-memory-gb")) {
    const double gb = a.get_double("kv-memory-gb", 2.0);
    if (!(gb > 0) || gb > 1e6) throw UsageError("--kv-memory-gb must be positive");
    f.kv_memory_gb = gb;
  }
  f.model = a.get("model");
  f.host = a.get_or("host", "127.0.0.1");
  f.boot_id = a.get_or("boot-id", "");
  f.served_model_name = a.get_or("served-model-name", default_model_name(f.model));
  return f;
}

}  // namespace sy::cli
