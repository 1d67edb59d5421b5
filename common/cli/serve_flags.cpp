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

const char* const kLimitFlags[] = {"max-header-bytes", "max-body-bytes",  "max-connections", "header-timeout-s",
                                   "body-timeout-s",   "idle-timeout-s", "write-timeout-s", "max-stream-buffer-bytes",
                                   "socket-send-buffer-bytes"};

LimitsConfig read_limits(const Args& a) {
  LimitsConfig l;
  auto bytes = [&](const char* flag, size_t& out) {
    const int64_t v = a.get_int(flag, static_cast<int64_t>(out));
    if (v < 0) throw UsageError(std::string("--") + flag + " must not be negative");
    out = static_cast<size_t>(v);
  };
  bytes("max-header-bytes", l.max_header_bytes);
  bytes("max-body-bytes", l.max_body_bytes);
  bytes("max-stream-buffer-bytes", l.max_stream_buffer_bytes);
  bytes("socket-send-buffer-bytes", l.socket_send_buffer_bytes);
  l.max_connections = int_in(a, "max-connections", l.max_connections, 1, 1'000'000);
  l.header_timeout_s = a.get_double("header-timeout-s", l.header_timeout_s);
  l.body_timeout_s = a.get_double("body-timeout-s", l.body_timeout_s);
  l.idle_timeout_s = a.get_double("idle-timeout-s", l.idle_timeout_s);
  l.write_timeout_s = a.get_double("write-timeout-s", l.write_timeout_s);
  if (auto p = l.problem()) {
    std::string flag = p->first;
    for (char& c : flag)
      if (c == '_') c = '-';
    throw UsageError("--" + flag + " " + p->second);
  }
  return l;
}

}  // namespace

std::optional<bool> read_numerics(const Args& a) {
  const std::string v = a.get_or("numerics", "auto");
  if (v != "auto" && v != "deterministic" && v != "fast") throw UsageError("--numerics must be auto, deterministic or fast");
  if (v == "auto") return std::nullopt;
  return v == "deterministic";
}

bool read_kv_f16(const Args& a) {
  const std::string v = a.get_or("kv-dtype", "f32");
  if (v != "f32" && v != "f16") throw UsageError("--kv-dtype must be f32 or f16");
  return v == "f16";
}

int32_t read_tp(const Args& a) { return int_in(a, "tp", 1, 1, 64); }

int32_t read_pcp(const Args& a) { return int_in(a, "pcp", 1, 1, 64); }

std::set<std::string> serve_flag_names() {
  std::set<std::string> names = {"model",        "host",          "port",       "boot-id",           "max-num-seqs", "kv-blocks",
                                 "kv-memory-gb", "prefill-chunk", "block-size", "served-model-name", "http-threads", "numerics", "tp", "pcp", "kv-dtype"};
  names.insert(std::begin(kLimitFlags), std::end(kLimitFlags));
  return names;
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
  f.limits = read_limits(a);
  f.deterministic = read_numerics(a);
  f.tp = read_tp(a);
  f.pcp = read_pcp(a);
  f.kv_f16 = read_kv_f16(a);
  return f;
}

}  // namespace sy::cli
